"""The differential between a rule's Rego and its CEL, both read from the template the profile's bundle ships
(bundles/gatekeeper/<profile>/<rule>/template.yaml): the Rego entry as Gatekeeper's Rego engine runs it, the
K8sNativeValidation entry as Gatekeeper's CEL engine runs it (tools/cel), on the same reviews. A rule whose CEL the
oldest supported Gatekeeper cannot compile ships its template without it; its CEL is judged in the entry a newer
Gatekeeper would be given (gatekeeper.judged_template), the CEL its standalone ValidatingAdmissionPolicy carries."""

from __future__ import annotations

import atexit
from dataclasses import dataclass
from functools import cache
from typing import Any

from kubeflow_trainer_policy.catalog import load_catalog
from kubeflow_trainer_policy.catalog.model import Rule
from kubeflow_trainer_policy.cel import gatekeeper, run
from kubeflow_trainer_policy.cel.source import CelSource, load_source
from kubeflow_trainer_policy.cel.toolchain import libraries
from kubeflow_trainer_policy.gatekeeper.runner import CompiledTemplate
from kubeflow_trainer_policy.profiles import Profile, generated_profiles, get_profile
from tests.rules.helpers import bundle

INT64 = (-(2**63), 2**63 - 1)


@cache
def cel_rules() -> tuple[tuple[Rule, CelSource], ...]:
    return tuple((rule, source) for rule in load_catalog() if (source := load_source(rule)) is not None)


@cache
def rego(profile: str, rule_id: str) -> CompiledTemplate:
    rule = next(r for r, _ in cel_rules() if r.id == rule_id)
    return CompiledTemplate(bundle(profile).templates[rule.kind], None)


@cache
def shipped(profile: str, rule_id: str) -> dict[str, Any]:
    rule = next(r for r, _ in cel_rules() if r.id == rule_id)
    return gatekeeper.judged_template(rule, get_profile(profile))


def shipped_templates(profile: Profile) -> dict[str, dict[str, Any]]:
    return {rule.id: shipped(profile.name, rule.id) for rule, _ in cel_rules()}


def rego_messages(profile: str, rule: Rule, review: dict[str, Any], parameters: Any) -> list[str]:
    violations, _ = rego(profile, rule.id).violations(review, parameters, {})
    return sorted(v["msg"] for v in violations)


_KEPT: dict[tuple[str, str, int], tuple[dict[str, Any], list[str]]] = {}


def kept_rego_messages(profile: str, rule: Rule, review: dict[str, Any], parameters: Any) -> list[str]:
    """rego_messages, once per (profile, rule, review object): the large reviews are judged by CEL on every library
    against one Rego answer. The review is kept with its answer, so its id is never reused."""
    key = (profile, rule.id, id(review))
    if key not in _KEPT:
        _KEPT[key] = (review, rego_messages(profile, rule, review, parameters))
    return _KEPT[key][1]


@dataclass(frozen=True)
class Difference:
    profile: str
    rule: str
    review: dict[str, Any]
    parameters: Any
    rego: list[str]
    cel: list[str]
    error: str


@dataclass
class Tally:
    """What the differential saw, for its report: reviews judged, the most one evaluation cost, and the reviews
    whose violations outnumbered their rule's CEL slots."""

    reviews: int = 0
    max_cost: int = 0
    truncated: int = 0


TALLY = Tally()


LIBRARIES = [lib.name for lib in libraries()]
"""Every CEL library a supported Gatekeeper vendors (tools/cel/libraries.json), oldest first."""
NEWEST = LIBRARIES[-1]


@cache
def session(library: str = NEWEST) -> run.CelSession:
    """One `cel eval --stream` per CEL library for the whole test run (closed at exit)."""
    opened = run.CelSession(library)
    atexit.register(opened.close)
    return opened


def agree(source: CelSource, rego: list[str], cel: list[str]) -> bool:
    """CEL reports what Rego reports; a rule with `slots` reports at most that many of them (each slot is one
    validation), so when Rego finds more, CEL must report exactly `slots` of Rego's messages."""
    if source.slots and len(rego) > source.slots:
        TALLY.truncated += 1
        return len(cel) == source.slots and set(cel) <= set(rego)
    return cel == rego


def differences(
    profile: Profile,
    reviews: list[tuple[Rule, dict[str, Any], dict[str, Any] | None]],
    library: str = NEWEST,
    *,
    keep_rego: bool = False,
) -> list[Difference]:
    """Each (rule, review, Constraint parameters) judged by both engines, the CEL on the named library; the ones
    where they disagree, or where the CEL spent more than Gatekeeper's budget. Rego reads the parameters as
    Gatekeeper gives them (`{}` when the Constraint has none); with keep_rego, once per review object."""
    judge = kept_rego_messages if keep_rego else rego_messages
    sources = dict((r.id, s) for r, s in cel_rules())
    outcomes = gatekeeper.evaluate(
        [gatekeeper.Review(rule, review, parameters) for rule, review, parameters in reviews],
        shipped_templates(profile),
        session(library),
        namespace=f"{profile.name}/",  # each profile's templates stay compiled in the one session
    )
    found = []
    for (rule, review, parameters), outcome in zip(reviews, outcomes, strict=True):
        expected = judge(profile.name, rule, review, {} if parameters is None else parameters)
        actual = sorted(outcome.violations)
        TALLY.reviews += 1
        TALLY.max_cost = max(TALLY.max_cost, outcome.cost)
        error = outcome.error
        if outcome.cost > gatekeeper.PER_CALL_LIMIT:
            error = f"cost {outcome.cost} over Gatekeeper's budget {gatekeeper.PER_CALL_LIMIT}"
        if error or not agree(sources[rule.id], expected, actual):
            found.append(Difference(profile.name, rule.id, review, parameters, expected, actual, error))
    return found


def admissible(value: Any) -> bool:
    """What Gatekeeper can hand its CEL engine: Kubernetes decodes a request's objects as unstructured objects (a
    mapping with a non-empty string kind) and JSON integers beyond int64 as floats, so no such integer reaches CEL
    while Rego keeps it exact; the API server decodes and validates every object's metadata as ObjectMeta
    before validating admission (and stores no other), so its name, namespace and labels have ObjectMeta's types;
    and it validates the object against its CRD's schema first too, so no list map (LIST_MAPS) holds two entries
    with one key."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("kind"), str)
        and value["kind"] != ""
        and ints_fit(value)
        and _object_meta(value.get("metadata", {}))
        and _list_maps_distinct(value)
    )


LIST_MAPS = (
    (("spec", "template", "spec", "replicatedJobs"), "name"),
    (("spec", "runtimePatches"), "manager"),
)
"""Lists that the Trainer's CRDs declare x-kubernetes-list-type map, with their key, where the CEL numbers entries
(an entry's index is the position of the first entry with its key, or for one without a key of the first entry
equal to it: indexOf): a runtime's replicatedJobs (JobSet's JobSetSpec, keyed by name, in every release) and a
TrainJob's runtimePatches (keyed by manager, v2.2+) with each patch's trainingRuntimeSpec.template.spec.replicatedJobs
(keyed by name). The API server refuses two entries with one key (and a key is required, so two equal entries share
theirs). These rules' Constraints match only the Trainer's kinds, so the paths are checked whatever the kind."""
PATCH_JOBS = (("trainingRuntimeSpec", "template", "spec", "replicatedJobs"), "name")


def _list_maps_distinct(value: dict[str, Any]) -> bool:
    lists = [(_at(value, path), key) for path, key in LIST_MAPS]
    patches = _at(value, LIST_MAPS[1][0])
    if isinstance(patches, list):
        lists += [(_at(patch, PATCH_JOBS[0]), PATCH_JOBS[1]) for patch in patches]
    return all(_distinct(entries, key) for entries, key in lists if isinstance(entries, list))


def _at(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _distinct(entries: list[Any], key: str) -> bool:
    """No two entries equal, and no two with the same (non-null) key. Python's == is coarser than CEL's
    (True == 1), so this refuses every pair CEL finds equal, and a few more."""
    keys = [e[key] for e in entries if isinstance(e, dict) and e.get(key) is not None]
    return all(a != b for i, a in enumerate(entries) for b in entries[i + 1 :]) and all(
        a != b for i, a in enumerate(keys) for b in keys[i + 1 :]
    )


def _object_meta(metadata: Any) -> bool:
    if not isinstance(metadata, dict):
        return False
    strings = all(isinstance(metadata[k], str) for k in ("name", "namespace", "generateName") if k in metadata)
    maps = all(
        isinstance(metadata[k], dict) and all(isinstance(v, str) for v in metadata[k].values())
        for k in ("labels", "annotations")
        if k in metadata
    )
    return strings and maps


def ints_fit(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return INT64[0] <= value <= INT64[1]
    if isinstance(value, dict):
        return all(ints_fit(v) for v in value.values())
    if isinstance(value, list):
        return all(ints_fit(v) for v in value)
    return True


def profiles() -> list[Profile]:
    return generated_profiles()
