"""Cluster objects as Gatekeeper sees them: data.inventory (admission.py) and Namespace lookups."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubeflow_trainer_policy_provider.documents import dig


def namespace_object(objects: Iterable[dict[str, Any]], name: str) -> dict[str, Any] | None:
    for obj in objects:
        if obj.get("apiVersion") == "v1" and obj.get("kind") == "Namespace" and dig(obj, "metadata", "name") == name:
            return obj
    return None
