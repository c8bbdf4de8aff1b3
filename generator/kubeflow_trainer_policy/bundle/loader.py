"""Loading a bundle's files into an engine the way `opa run -b` activates it: nothing registered beyond OPA."""

from __future__ import annotations

import json
from typing import Any

import yaml

from kubeflow_trainer_policy.engine.base import PolicyEngine

DATA_FILES = ("data.json", "data.yaml")


def data_path(name: str) -> str:
    """`a/b/data.json` -> `a/b` (the document's path under `data`), `data.json` -> ``."""
    return name.rpartition("/")[0]


def bundle_data(files: dict[str, bytes]) -> list[tuple[str, Any]]:
    """[(path, value)] of every data file, shallowest first. Raises ValueError on a file that does not parse."""
    documents = []
    for name in sorted((n for n in files if n.rsplit("/", 1)[-1] in DATA_FILES), key=lambda n: (n.count("/"), n)):
        try:
            value = yaml.safe_load(files[name]) if name.endswith(".yaml") else json.loads(files[name])
        except (ValueError, yaml.YAMLError) as exc:
            raise ValueError(f"{name}: does not parse: {' '.join(str(exc).split())}") from exc
        documents.append((data_path(name), value))
    return documents


def load_bundle(engine: PolicyEngine, files: dict[str, bytes]) -> None:
    """Every module under its bundle path and every data file at its folder's path."""
    for name, content in sorted(files.items()):
        if name.endswith(".rego"):
            engine.add_module(name, content.decode())
    for path, value in bundle_data(files):
        engine.add_data(value, path.replace("/", "."))
