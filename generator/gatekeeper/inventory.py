"""`data.inventory` in Gatekeeper's layout, as its sync would fill it from cluster objects."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from generator.gatekeeper.documents import dig


def build_inventory(objects: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """namespace[<ns>][<groupVersion>][<Kind>][<name>] and cluster[<groupVersion>][<Kind>][<name>].

    Like Gatekeeper with nothing synced, a layer exists only where an object is: policies must use
    object.get on every step.
    """
    inventory: dict[str, Any] = {}
    for obj in objects:
        api_version, kind, name = obj.get("apiVersion"), obj.get("kind"), dig(obj, "metadata", "name")
        if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
            continue
        namespace = dig(obj, "metadata", "namespace")
        if namespace:
            tree = inventory.setdefault("namespace", {}).setdefault(namespace, {})
        else:
            tree = inventory.setdefault("cluster", {})
        tree.setdefault(api_version, {}).setdefault(kind, {})[name] = obj
    return inventory


def namespace_object(objects: Iterable[dict[str, Any]], name: str) -> dict[str, Any] | None:
    for obj in objects:
        if obj.get("apiVersion") == "v1" and obj.get("kind") == "Namespace" and dig(obj, "metadata", "name") == name:
            return obj
    return None
