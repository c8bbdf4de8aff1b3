"""What OPA checks when it activates a bundle, minus the signature: manifest, roots, Rego v1 compiles
with OPA's own builtins only (no `external_data`), data files parse and lie under the roots."""

from __future__ import annotations

import json
from typing import Any

from kubeflow_trainer_policy.bundle.build import MANIFEST, SIGNATURES
from kubeflow_trainer_policy.bundle.loader import DATA_FILES, bundle_data, load_bundle
from kubeflow_trainer_policy.engine import EmbeddedOpaEngine
from kubeflow_trainer_policy.engine.fact_cache import FactCache
from kubeflow_trainer_policy.engine.rego_ast import RegoParser
from kubeflow_trainer_policy.errors import EngineError


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def _under_roots(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root + "/") or root == "" for root in roots)


def bundle_problems(files: dict[str, bytes]) -> list[str]:
    """Empty when the bundle would activate; otherwise one line per problem."""
    problems: list[str] = []
    manifest: dict[str, Any] = {}
    if MANIFEST in files:
        try:
            manifest = json.loads(files[MANIFEST])
        except (ValueError, RecursionError) as exc:
            problems.append(f"{MANIFEST}: not JSON: {exc}")
        if not isinstance(manifest, dict):
            problems.append(f"{MANIFEST}: not a JSON object")
            manifest = {}
    else:
        problems.append(f"{MANIFEST} is missing")
    if manifest.get("rego_version") != 1:
        problems.append(f"{MANIFEST}: rego_version must be 1 (the modules are Rego v1)")
    roots = manifest.get("roots") or []
    if not isinstance(roots, list) or not all(isinstance(root, str) for root in roots):
        problems.append(f"{MANIFEST}: roots must be a list of strings")
        roots = []
    modules = {name: content for name, content in files.items() if name.endswith(".rego")}
    if not modules:
        problems.append("the bundle holds no Rego module")
    parser = RegoParser(FactCache(None))  # a bundle's modules are not this project's: nothing of them on disk
    for name, content in sorted(modules.items()):
        try:
            package = parser.parse(name, content.decode()).package
        except (EngineError, UnicodeDecodeError) as exc:
            problems.append(f"{name}: {_one_line(exc)}")
            continue
        if not _under_roots(package.replace(".", "/"), roots):
            problems.append(f"{name}: package {package} is outside the manifest roots {roots}")
    try:
        documents = bundle_data(files)
    except ValueError as exc:
        problems.append(str(exc))
        documents = []
    for path, value in documents:
        keys = [f"{path}/{key}".lstrip("/") for key in value] if isinstance(value, dict) else [path]
        outside = [key for key in keys if not _under_roots(key, roots)]
        if outside:
            problems.append(f"{path or '.'}/data: {outside[0]} is outside the manifest roots {roots}")
    if not problems:
        problems += _compile_problems(files)
    for name in files:
        loaded = name in modules or name in (MANIFEST, SIGNATURES) or name.rsplit("/", 1)[-1] in DATA_FILES
        if not loaded:
            problems.append(f"{name}: OPA does not load this file")
    return problems


def _compile_problems(files: dict[str, bytes]) -> list[str]:
    with EmbeddedOpaEngine() as engine:
        try:
            load_bundle(engine, files)
            engine.eval_query("x := 1")
        except (EngineError, UnicodeDecodeError) as exc:
            return [f"the modules do not compile together: {_one_line(exc)}"]
        except ValueError as exc:  # data files that do not merge
            return [_one_line(exc)]
    return []
