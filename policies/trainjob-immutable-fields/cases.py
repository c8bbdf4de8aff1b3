"""Spec E8 and the profile table (research C10): TrainJob fields the CRD's CEL transition rules freeze."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Expected
from kubeflow_trainer_policy.catalog.trainjob_fixtures import container, override_entry, runtime, trainjob
from kubeflow_trainer_policy.profiles import Profile


@dataclass(frozen=True)
class ImmutableFieldsSettings:
    immutable_fields: tuple[tuple[str, str], ...]
    """C10: (spec field, CEL message) pairs immutable on UPDATE (managedBy is trainjob-managed-by's)."""
    patch_fields_immutable: bool
    """C10 (v2.2+): fields of each runtime patch's pod spec are immutable (CEL transition rules)."""
    termination_grace_period_immutable: bool = False
    """v2.3 added terminationGracePeriodSeconds to the patch's pod spec, with a transition rule of its own."""


V20_IMMUTABLE = (("runtimeRef", "runtimeRef is immutable"),)
"""v2.0 and v2.1: only runtimeRef (besides managedBy) is immutable, with its own CEL message."""
V22_IMMUTABLE = tuple(
    (name, "field is immutable") for name in ("runtimeRef", "initializer", "trainer", "activeDeadlineSeconds")
)

# What each Trainer release does, as the cases expect it (src.rego keeps the Rego's own table).
RELEASES = {
    "v2.0": ImmutableFieldsSettings(immutable_fields=V20_IMMUTABLE, patch_fields_immutable=False),
    "v2.1": ImmutableFieldsSettings(immutable_fields=V20_IMMUTABLE, patch_fields_immutable=False),
    "v2.2": ImmutableFieldsSettings(immutable_fields=V22_IMMUTABLE, patch_fields_immutable=True),
    "v2.3": ImmutableFieldsSettings(
        immutable_fields=V22_IMMUTABLE, patch_fields_immutable=True, termination_grace_period_immutable=True
    ),
}

SUSPENDED = {"suspend": True}
POD = "trainingRuntimeSpec.template.spec.replicatedJobs[{j}].template.spec.template.spec.{f}"


def _update(p: Profile, name: str, description: str, old: dict, new: dict, expected: tuple = ()) -> Case:
    return Case(
        name,
        description,
        new,
        operation="UPDATE",
        old_object=old,
        cluster=(runtime(), runtime("other")),
        expected=expected,
    )


def _immutable(p: Profile, field: str) -> tuple[Expected, ...]:
    detail = dict(RELEASES[p.name].immutable_fields).get(field)
    return () if detail is None else (Expected(f"spec.{field}", "Invalid", detail),)


def _patch(p: Profile, manager: str, job: str, **pod: Any) -> dict[str, Any]:
    return _jobs_patch(p, manager, (job, pod))


def _jobs_patch(p: Profile, manager: str, *jobs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """One patch of `manager` whose replicated jobs are the (name, pod spec) pairs, in that order."""
    entry = override_entry(p, [name for name, _ in jobs], manager=manager)
    for patched, (_, pod) in zip(entry["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"], jobs, strict=True):
        patched["template"] = {"spec": {"template": {"spec": pod}}}
    return entry


def _patch_cases(p: Profile) -> list[Case]:
    def tj(*patches: dict[str, Any]) -> dict[str, Any]:
        return trainjob(p, overrides=list(patches), extra=SUSPENDED)

    base = _patch(p, "example.com/site", "node", serviceAccountName="a", containers=[container("node")])
    return [
        _update(
            p,
            "patch_pod_fields_changed",
            "v2.2+: serviceAccountName and containers of the same manager's patch of the same job: each Invalid at "
            "the new object's indexes.",
            tj(_patch(p, "acme.io/other", "node"), base),
            tj(
                _patch(p, "acme.io/other", "node"),
                _patch(p, "example.com/site", "node", serviceAccountName="b", containers=[container("node", [])]),
            ),
            (
                Expected(
                    "spec.runtimePatches[1]." + POD.format(j=0, f="serviceAccountName"), "Invalid", "field is immutable"
                ),
                Expected("spec.runtimePatches[1]." + POD.format(j=0, f="containers"), "Invalid", "field is immutable"),
            ),
        ),
        _update(
            p,
            "patch_mutable_fields_changed",
            "nodeSelector (and tolerations, affinity, schedulingGates, metadata) may change.",
            tj({**base}),
            tj(
                _patch(
                    p,
                    "example.com/site",
                    "node",
                    serviceAccountName="a",
                    containers=[container("node")],
                    nodeSelector={"a": "b"},
                )
            ),
        ),
        _update(
            p,
            "patch_field_added",
            "Adding a field is not a transition CEL can see.",
            tj(_patch(p, "example.com/site", "node")),
            tj(base),
        ),
        _update(
            p,
            "patch_manager_repeated",
            "An old object whose patches repeat a manager (listType=map forbids it, an odd object may have it): "
            "each patch of that manager is paired with the new one, and only the same job's fields are compared.",
            tj(base, _patch(p, "example.com/site", "dataset-initializer")),
            tj(_patch(p, "example.com/site", "node", serviceAccountName="b", containers=[container("node")])),
            (
                Expected(
                    "spec.runtimePatches[0]." + POD.format(j=0, f="serviceAccountName"), "Invalid", "field is immutable"
                ),
            ),
        ),
        _update(
            p,
            "patch_job_name_repeated",
            "An old patch whose jobs repeat a name (listType=map forbids it, an odd object may have it): each old "
            "job of that name is paired with the new one (an equal one is passed over), other names are not.",
            tj(
                _jobs_patch(
                    p,
                    "example.com/site",
                    ("node", {"serviceAccountName": "a", "containers": [container("node")]}),
                    ("dataset-initializer", {"serviceAccountName": "z"}),
                    ("node", {"serviceAccountName": "b", "containers": [container("node")]}),
                )
            ),
            tj(
                _jobs_patch(
                    p,
                    "example.com/site",
                    ("dataset-initializer", {"serviceAccountName": "z"}),
                    ("node", {"serviceAccountName": "b", "containers": [container("node")]}),
                )
            ),
            (
                Expected(
                    "spec.runtimePatches[0]." + POD.format(j=1, f="serviceAccountName"), "Invalid", "field is immutable"
                ),
            ),
        ),
        _update(
            p,
            "patch_one_job_of_several_changed",
            "A patch of three jobs, reordered, whose node's containers changed: jobs are paired by name, not "
            "position, and only the changed one is Invalid, at its new index.",
            tj(
                _jobs_patch(
                    p,
                    "example.com/site",
                    ("node", {"serviceAccountName": "a", "containers": [container("node")]}),
                    ("model-initializer", {"serviceAccountName": "a"}),
                    ("dataset-initializer", {"serviceAccountName": "a"}),
                )
            ),
            tj(
                _jobs_patch(
                    p,
                    "example.com/site",
                    ("dataset-initializer", {"serviceAccountName": "a"}),
                    ("model-initializer", {"serviceAccountName": "a"}),
                    ("node", {"serviceAccountName": "a", "containers": [container("node", [])]}),
                )
            ),
            (Expected("spec.runtimePatches[0]." + POD.format(j=2, f="containers"), "Invalid", "field is immutable"),),
        ),
        _update(
            p,
            "patch_termination_grace_period_changed",
            "v2.3: terminationGracePeriodSeconds 300 -> 600 in a suspended TrainJob's patch is Invalid, as "
            "serviceAccountName is (v2.2's patch has no such field, so no rule).",
            tj(_patch(p, "example.com/site", "node", terminationGracePeriodSeconds=300)),
            tj(_patch(p, "example.com/site", "node", terminationGracePeriodSeconds=600)),
            (
                Expected(
                    "spec.runtimePatches[0]." + POD.format(j=0, f="terminationGracePeriodSeconds"),
                    "Invalid",
                    "field is immutable",
                ),
            )
            if RELEASES[p.name].termination_grace_period_immutable
            else (),
        ),
        _update(
            p,
            "patch_termination_grace_period_added",
            "Setting terminationGracePeriodSeconds where it was unset is not a transition CEL can see.",
            tj(_patch(p, "example.com/site", "node")),
            tj(_patch(p, "example.com/site", "node", terminationGracePeriodSeconds=600)),
        ),
        _update(
            p,
            "patch_of_another_manager",
            "A patch under a new manager is not correlated with the old one.",
            tj(base),
            tj(_patch(p, "acme.io/new", "node", serviceAccountName="b")),
        ),
    ]


def cases(p: Profile) -> list[Case]:
    def tj(**kw: Any) -> dict[str, Any]:
        return trainjob(p, extra={**SUSPENDED, **kw.pop("extra", {})}, **kw)

    result = [
        _update(p, "unchanged_allowed", "Nothing changed.", tj(trainer={"numNodes": 2}), tj(trainer={"numNodes": 2})),
        _update(
            p,
            "runtime_ref_changed",
            "runtimeRef is immutable in every profile (v2.0/v2.1 `runtimeRef is immutable`, v2.2+ `field is "
            "immutable`).",
            tj(),
            tj(runtime="other"),
            _immutable(p, "runtimeRef"),
        ),
        _update(
            p,
            "trainer_changed",
            "v2.2+: spec.trainer is immutable as a whole (numNodes may change before v2.2).",
            tj(trainer={"numNodes": 2}),
            tj(trainer={"numNodes": 3}),
            _immutable(p, "trainer"),
        ),
        _update(
            p,
            "initializer_changed",
            "v2.2+: spec.initializer is immutable.",
            tj(initializer={"dataset": {"storageUri": "hf://a"}}),
            tj(initializer={"dataset": {"storageUri": "hf://b"}}),
            _immutable(p, "initializer"),
        ),
        _update(
            p,
            "active_deadline_changed",
            "v2.2+: spec.activeDeadlineSeconds is immutable (the field does not exist before).",
            tj(extra={"activeDeadlineSeconds": 60}),
            tj(extra={"activeDeadlineSeconds": 120}),
            _immutable(p, "activeDeadlineSeconds"),
        ),
        _update(
            p,
            "initializer_added",
            "Setting a field that was unset is not a change to a CEL transition rule.",
            tj(),
            tj(initializer={"dataset": {"storageUri": "hf://a"}}),
        ),
        Case("create_not_checked", "CREATE has no old object.", tj(runtime="other"), cluster=(runtime("other"),)),
        Case(
            "audit_not_checked",
            "Audit has no old object: transition rules never fire.",
            tj(runtime="other"),
            operation=AUDIT,
            cluster=(runtime("other"),),
        ),
    ]
    if RELEASES[p.name].patch_fields_immutable:
        result += _patch_cases(p)
    return result
