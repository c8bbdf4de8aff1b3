"""Bundle test helpers: load a bundle tarball the way `opa run -b` does, read suite cases, run the runner."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from typing import Any

import yaml

from kubeflow_trainer_policy.admission import inventory_document
from kubeflow_trainer_policy.engine import EmbeddedOpaEngine
from kubeflow_trainer_policy.engine.rego_ast import RegoParser
from kubeflow_trainer_policy.gatekeeper.policy_set import PolicySet, load_policy_set
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest, request_from_document
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from kubeflow_trainer_policy.paths import BUNDLES_DIR, gatekeeper_bundle_dir
from kubeflow_trainer_policy_provider.reader import read_documents, read_single

PROFILES = sorted(p.name for p in (BUNDLES_DIR / "gatekeeper").iterdir() if p.is_dir())


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kubeflow_trainer_policy.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def tar_members(bundle: bytes) -> dict[str, bytes]:
    """The tarball's files by name, leading slash dropped; read here with tarfile, not the code under test."""
    with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as tar:
        return {m.name.lstrip("/"): tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


class OpaBundle:
    """A bundle activated as `opa run -b` does: every .rego module, every data.json at its folder's path,
    nothing registered beyond OPA's builtins; `data.inventory` added as a user (or kube-mgmt) would."""

    def __init__(self, bundle: bytes, inventory: dict[str, Any] | None = None):
        self.engine = EmbeddedOpaEngine()
        for name, content in sorted(tar_members(bundle).items()):
            if name.endswith(".rego"):
                self.engine.add_module(name, content.decode())
            elif name.rsplit("/", 1)[-1] == "data.json":
                self.engine.add_data(json.loads(content), name.rpartition("/")[0].replace("/", "."))
        if inventory:
            self.engine.add_data(inventory, "inventory")

    def query(self, path: str, input: Any) -> Any:
        result = self.engine.eval_document(path, input)
        assert result.defined, f"data.{path} is undefined"
        return result.value

    def query_with_inventory(self, path: str, input: Any, inventory: dict[str, Any]) -> Any:
        """`query` with `data.inventory` replaced for this query alone, so one activated bundle (its modules
        compiled once) decides every case: `with` replaces the stored document as adding it would."""
        query = f"x := data.{path} with input as input.input with data.inventory as input.inventory"
        result = self.engine.eval_query(query, {"input": input, "inventory": inventory})
        assert result.bindings, f"data.{path} is undefined"
        return result.bindings[0]["x"]

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> OpaBundle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def plain_opa_decision(bundle: bytes, input: Any, objects: list[dict[str, Any]]) -> dict[str, Any]:
    with OpaBundle(bundle, inventory_document(objects)) as opa:
        return opa.query("kubeflow.trainer.decision", input)


def calls_external_data(path: str, source: str) -> bool:
    """Whether OPA's parser finds a call of Gatekeeper's external_data builtin (comments do not count)."""
    return "external_data" in RegoParser().parse(path, source).calls


def runnable_kinds(profile: str) -> set[str]:
    """Kinds of the profile's templates plain OPA can run: none of their modules calls external_data."""
    templates = load_policy_set([gatekeeper_bundle_dir(profile)]).templates.values()
    return {t.kind for t in templates if not any(calls_external_data(m.path, m.source) for m in t.modules)}


def restricted_policy_set(profile: str, kinds: set[str]) -> PolicySet:
    full = load_policy_set([gatekeeper_bundle_dir(profile)])
    return PolicySet(
        {k: t for k, t in full.templates.items() if k in kinds}, [c for c in full.constraints if c.kind in kinds], {}
    )


@dataclass(frozen=True)
class SuiteCase:
    profile: str
    suite: str
    name: str
    request: AdmissionRequest
    raw: dict[str, Any]
    """The case's object file as written (an AdmissionReview, or a bare object)."""
    objects: list[dict[str, Any]]

    @property
    def id(self) -> str:
        return f"{self.profile}/{self.suite}/{self.name}"


def suite_cases(profile: str, kinds: set[str]) -> list[SuiteCase]:
    """Every case of every suite of the profile whose template has one of `kinds`."""
    cases = []
    for path in sorted(gatekeeper_bundle_dir(profile).glob("*/suite.yaml")):
        suite = yaml.safe_load(path.read_text())
        for test in suite["tests"]:
            template_kinds = set(load_policy_set([path.parent / test["template"]]).templates)
            if not template_kinds & kinds:
                continue
            for case in test["cases"]:
                doc = read_single(path.parent / case["object"])
                objects = [d.body for f in case.get("inventory") or [] for d in read_documents(path.parent / f)]
                cases.append(
                    SuiteCase(profile, path.parent.name, case["name"], request_from_document(doc), doc.body, objects)
                )
    return cases


def runner_decision(runner: GatekeeperRunner, request: AdmissionRequest, objects: list[dict[str, Any]]) -> dict:
    runner.set_objects(objects)
    return runner.review(request).as_json()
