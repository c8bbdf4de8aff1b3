"""Loading a bundle's files into an engine the way `opa run -b` activates it: nothing registered beyond OPA."""

from __future__ import annotations

from typing import Any

from kubeflow_trainer_policy.engine.base import PolicyEngine
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy_provider.reader import decode, parse_value

DATA_FILES = ("data.json", "data.yaml")


def data_path(name: str) -> str:
    """`a/b/data.json` -> `a/b` (the document's path under `data`), `data.json` -> ``."""
    return name.rpartition("/")[0]


def bundle_data(files: dict[str, bytes]) -> list[tuple[str, Any]]:
    """[(path, value)] of every data file, shallowest first, read with the reader's limits (a data.yaml is as
    hostile as any YAML). Raises ValueError on a file that does not parse."""
    documents = []
    for name in sorted((n for n in files if n.rsplit("/", 1)[-1] in DATA_FILES), key=lambda n: (n.count("/"), n)):
        try:
            value = parse_value(decode(files[name], name), name)
        except InputError as exc:
            raise ValueError(f"{name}: does not parse: {exc.message}") from exc
        documents.append((data_path(name), value))
    return documents


def merged_data(documents: list[tuple[str, Any]]) -> dict[str, Any]:
    """Every data document at its path in one tree, as OPA merges a bundle's data files: objects merge, any other
    value must not meet a different one. One tree, added to the engine once: adding each file in turn made the
    engine merge its whole store again per file (quadratic in files)."""
    root: dict[str, Any] = {}
    for path, value in documents:
        parts = path.split("/") if path else []
        node = root
        for depth, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f"{'/'.join(parts[: depth + 1])}: data conflicts with data below it")
            node = child
        if not parts:
            if not isinstance(value, dict):
                raise ValueError("data.json at the bundle root must hold an object")
            _merge(root, value, "")
        elif isinstance(value, dict) and isinstance(node.get(parts[-1], {}), dict):
            _merge(node.setdefault(parts[-1], {}), value, path)
        elif parts[-1] in node and node[parts[-1]] != value:
            raise ValueError(f"{path}: data conflicts with other data at the same path")
        else:
            node[parts[-1]] = value
    return root


def _merge(into: dict[str, Any], value: dict[str, Any], path: str) -> None:
    for key, item in value.items():
        where = f"{path}/{key}".lstrip("/")
        if isinstance(item, dict) and isinstance(into.get(key), dict):
            _merge(into[key], item, where)
        elif key in into and into[key] != item:
            raise ValueError(f"{where}: data conflicts with other data at the same path")
        else:
            into[key] = item


def load_bundle(engine: PolicyEngine, files: dict[str, bytes]) -> None:
    """Every module under its bundle path and all data files merged, added at once."""
    for name, content in sorted(files.items()):
        if name.endswith(".rego"):
            engine.add_module(name, content.decode())
    data = merged_data(bundle_data(files))
    if data:
        engine.add_data(data)
