"""The Rego lib `lib.trainer.podsets` on the embedded OPA: the PodSets exactly as the budget rule sees them."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kubeflow_trainer_policy.engine import EmbeddedOpaEngine
from kubeflow_trainer_policy.engine.lenient import LenientBuiltins
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy_provider.documents import dig
from kubeflow_trainer_policy_provider.reader import read_single

BUDGET_KIND = "TrainerTrainJobResourceBudget"
LIBS = ("review", "runtime", "nanos", "podsets")
COMPUTE = "x := data.lib.trainer.podsets.compute(input.trainjob, input.runtime)"
# The runtime lib reads data.inventory, as in Gatekeeper; here the inventory comes with the query.
LOOKUP = (
    "x := data.lib.trainer.runtime.lookup(input.trainjob) with data.inventory as input.inventory; "
    "runtimes := [r | r := data.lib.trainer.runtime.get(input.trainjob, x.ref)] with data.inventory as input.inventory"
)


class PodSetsEngine:
    """One warm engine holding the libs; build it once and evaluate many TrainJobs."""

    def __init__(self, lib_sources: Iterable[str]):
        self.engine = EmbeddedOpaEngine()
        for i, source in enumerate(lib_sources):
            self.engine.add_module(f"lib{i}.rego", source)
        self.engine.eval_query("x := 1")
        self.lenient = LenientBuiltins(self.engine, EmbeddedOpaEngine)  # builtins fail as in Gatekeeper

    @classmethod
    def from_catalog(cls) -> PodSetsEngine:
        """The libs as the generator renders them into every template."""
        from kubeflow_trainer_policy.render.rego import lib

        return cls(lib(name).source for name in LIBS)

    @classmethod
    def from_bundle(cls, bundle_dir: Path) -> PodSetsEngine:
        """The libs the budget ConstraintTemplate of a Gatekeeper bundle ships."""
        for path in sorted(bundle_dir.glob("*/template.yaml")):
            template = read_single(path).body
            if dig(template, "spec", "crd", "spec", "names", "kind") == BUDGET_KIND:
                return cls(template["spec"]["targets"][0]["code"][0]["source"]["libs"])
        raise InputError(str(bundle_dir), f"no ConstraintTemplate of kind {BUDGET_KIND} in this bundle")

    def compute(self, trainjob: dict[str, Any], runtime: dict[str, Any]) -> dict[str, Any]:
        result = self.lenient.evaluate(lambda lenient: COMPUTE + lenient, {"trainjob": trainjob, "runtime": runtime})
        return result.bindings[0]["x"]

    def runtime(self, inventory: dict[str, Any], trainjob: dict[str, Any]) -> dict[str, Any]:
        """The runtime lib's lookup, with the runtime itself under "runtime" when it was found."""
        query = LOOKUP.replace(" with data.inventory as input.inventory", " with data.inventory as input.inventory{}")
        result = self.lenient.evaluate(
            lambda lenient: query.format(lenient, lenient), {"inventory": inventory, "trainjob": trainjob}
        )
        bindings = result.bindings[0]
        return {**bindings["x"], "runtime": bindings["runtimes"][0]} if bindings["runtimes"] else bindings["x"]

    def close(self) -> None:
        self.lenient.close()
        self.engine.close()

    def __enter__(self) -> PodSetsEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
