"""An OPA bundle holding exactly the Rego that a profile's ConstraintTemplates ship."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from generator.engine.rego_ast import RegoParser
from generator.gatekeeper.policy_set import load_policy_set

MANIFEST = ".manifest"
SIGNATURES = ".signatures.json"


@dataclass(frozen=True)
class BundleContent:
    files: dict[str, bytes]
    """Rego modules by path, plus `.manifest`."""
    roots: list[str]
    revision: str


def _module_path(package: str) -> str:
    return package.replace(".", "/") + ".rego"


def _root(path: str) -> str:
    """The package's first segment; for `lib.<x>...` two segments, so the bundle does not claim every lib."""
    segments = path.removesuffix(".rego").split("/")
    return "/".join(segments[:2]) if segments[0] == "lib" and len(segments) > 2 else segments[0]


def collect_modules(constraints_dir: Path, parser: RegoParser | None = None) -> dict[str, str]:
    """{bundle path: Rego source}, one file per package, libs shared by several templates once."""
    parser = parser or RegoParser()
    modules: dict[str, str] = {}
    for template in load_policy_set([constraints_dir], parser).templates.values():
        for module in template.modules:
            path = _module_path(parser.parse(module.path, module.source).package)
            if path in modules and modules[path] != module.source:
                raise ValueError(f"two templates ship different Rego for {path} ({template.name})")
            modules[path] = module.source
    return modules


def build_bundle(constraints_dir: Path, profile: str, version: str, revision: str | None = None) -> BundleContent:
    modules = collect_modules(constraints_dir)
    roots = sorted({_root(path) for path in modules})
    digest = hashlib.sha256()
    for path in sorted(modules):
        digest.update(path.encode() + b"\0" + modules[path].encode() + b"\0")
    revision = revision or f"{version}+{profile}.{digest.hexdigest()[:12]}"
    manifest = {
        "revision": revision,
        "roots": roots,
        "rego_version": 1,
        "metadata": {"name": "kubeflow-trainer-policy", "profile": profile, "version": version},
    }
    files = {path: source.encode() for path, source in modules.items()}
    files[MANIFEST] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    return BundleContent(files=files, roots=roots, revision=revision)
