"""What OPA checks when it activates a bundle, minus the signature: manifest, roots, Rego v1 compiles."""

from __future__ import annotations

import json
from typing import Any

from generator.bundle.build import MANIFEST, SIGNATURES
from generator.engine import EmbeddedOpaEngine
from generator.engine.rego_ast import RegoParser
from generator.errors import EngineError


def bundle_problems(files: dict[str, bytes]) -> list[str]:
    """Empty when the bundle would activate; otherwise one line per problem."""
    problems: list[str] = []
    manifest: dict[str, Any] = {}
    if MANIFEST in files:
        try:
            manifest = json.loads(files[MANIFEST])
        except ValueError as exc:
            problems.append(f"{MANIFEST}: not JSON: {exc}")
    else:
        problems.append(f"{MANIFEST} is missing")
    if manifest.get("rego_version") != 1:
        problems.append(f"{MANIFEST}: rego_version must be 1 (the modules are Rego v1)")
    roots = manifest.get("roots") or []
    modules = {name: content for name, content in files.items() if name.endswith(".rego")}
    if not modules:
        problems.append("the bundle holds no Rego module")
    parser = RegoParser()
    with EmbeddedOpaEngine() as engine:
        engine.register_builtin("external_data", lambda _request: None, arity=1)
        for name, content in sorted(modules.items()):
            try:
                package = parser.parse(name, content.decode()).package
                engine.add_module(name, content.decode())
            except (EngineError, UnicodeDecodeError) as exc:
                problems.append(f"{name}: {' '.join(str(exc).split())}")
                continue
            if not any(
                package == root.replace("/", ".") or package.startswith(root.replace("/", ".") + ".") for root in roots
            ):
                problems.append(f"{name}: package {package} is outside the manifest roots {roots}")
        try:
            engine.eval_query("x := 1")
        except EngineError as exc:
            problems.append(f"the modules do not compile together: {' '.join(str(exc).split())}")
    for name in files:
        if name not in modules and name not in (MANIFEST, SIGNATURES) and not name.endswith(("data.json", "data.yaml")):
            problems.append(f"{name}: OPA does not load this file")
    return problems
