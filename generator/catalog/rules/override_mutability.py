"""Spec A+B: TrainJob overrides (and the schedulingGates inside them) change only while allowed.

Two rules with the same cases: one reads the JobSet from data.inventory (JobSets synced by
Gatekeeper; its Rego never mentions external_data, so gator can run its suite), one asks the
external data provider (with a lookup key unique to each admission request).
"""

from __future__ import annotations

from generator.catalog.fixtures import KUEUE_GATE, jobset, override, trainjob
from generator.catalog.model import AUDIT, Case, DataNeeds, Expected, MatchKind, Parameter, Rule, SyncKind, case_uid
from generator.catalog.trainjob_fixtures import with_runtime
from generator.profiles import Profile

PROVIDER = "trainer-jobset-provider"
KEY = "team-a/job"


def _internal(error: str, provider: str = PROVIDER) -> str:
    return f"failed to get the state of JobSet {KEY} from external data provider {provider}: {error}"


def lookup_key(case_name: str) -> str:
    """The key the external-data rule sends for a case's request (see the template's lookup_key)."""
    return f"{KEY}#{case_uid(case_name)}"


def _shared_cases(p: Profile) -> list[Case]:
    """Cases that hold whether the JobSet state comes from the inventory or from the provider."""
    field = p.override_path
    forbidden_suspend = Expected(field, "Forbidden", p.suspend_detail)

    def active(job: str) -> Expected:
        return Expected(field, "Forbidden", p.active_detail(job))

    def internal(error: str) -> Expected:
        return Expected(field, "Internal", _internal(error))

    running = jobset(statuses=[{"name": "node", "active": 2, "ready": 2}])
    two_active = jobset(
        statuses=[
            {"name": "dataset-initializer", "active": 0, "succeeded": 1},
            {"name": "node", "active": 4},
            {"name": "launcher", "active": 1},
        ]
    )
    finished = jobset(
        statuses=[
            {"name": "node", "active": 0, "ready": 3, "succeeded": 1, "failed": 2, "suspended": 1},
        ]
    )
    before = [override(gates=["a"])]
    after = [override(gates=["b"])]

    def update(name: str, description: str, old: dict, new: dict, **kw: object) -> Case:
        return Case(name, description, new, operation="UPDATE", old_object=old, **kw)  # type: ignore[arg-type]

    unsuspend_expected = () if p.suspend_rule == "old_or_new" else (forbidden_suspend,)
    return [
        Case(
            "create_is_never_checked",
            "CREATE is never checked, even unsuspended with an active JobSet.",
            trainjob(p, overrides=before),
            cluster=(running,),
        ),
        update(
            "unchanged_overrides_allowed",
            "Overrides unchanged: allowed whatever else or the JobSet state.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=before, suspend=False),
            cluster=(running,),
        ),
        update(
            "absent_null_and_empty_are_equal",
            "An absent list, null and [] are equal.",
            trainjob(p),
            trainjob(p, overrides=[]),
            cluster=(running,),
        ),
        update(
            "null_equals_empty",
            "null and [] are equal.",
            trainjob(p, unset=(p.override_field,)),
            trainjob(p, overrides=[]),
            cluster=(running,),
        ),
        update(
            "quantities_compare_by_value",
            "1 == 1000m and 1Gi == 1024Mi: no change.",
            trainjob(p, overrides=[override(requests={"cpu": "1", "memory": "1Gi"})]),
            trainjob(p, overrides=[override(requests={"cpu": "1000m", "memory": "1024Mi"})]),
            cluster=(running,),
        ),
        update(
            "quantity_value_change_is_a_change",
            "2 != 1000m: a change, refused while running unsuspended.",
            trainjob(p, overrides=[override(requests={"cpu": "1000m"})]),
            trainjob(p, overrides=[override(requests={"cpu": "2"})]),
            cluster=(running,),
            expected=(forbidden_suspend,),
        ),
        update(
            "order_matters",
            "The list is atomic: reordering entries is a change.",
            trainjob(p, overrides=[override("node", gates=["a"]), override("launcher")]),
            trainjob(p, overrides=[override("launcher"), override("node", gates=["a"])]),
            expected=(forbidden_suspend,),
        ),
        update(
            "changed_while_not_suspended",
            "Changed without suspend: Forbidden (the JobSet is not consulted).",
            trainjob(p, overrides=before),
            trainjob(p, overrides=after),
            expected=(forbidden_suspend,),
        ),
        update(
            "suspend_must_be_exactly_true",
            'suspend: "true" (a string) is not suspended.',
            trainjob(p, overrides=before),
            trainjob(p, overrides=after, suspend="true"),
            expected=(forbidden_suspend,),
        ),
        update(
            "change_and_suspend_in_one_request",
            "Changing overrides and suspending in one request passes.",
            trainjob(p, overrides=before, suspend=False),
            trainjob(p, overrides=after, suspend=True),
        ),
        update(
            "change_and_unsuspend_in_one_request",
            "Changing overrides and unsuspending in one request: denied in v2.0 (new object only); "
            "allowed from v2.3 (old object suspended) while the JobSet does not exist.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=False),
            expected=unsuspend_expected,
        ),
        update(
            "suspended_jobset_not_found",
            "A JobSet that does not exist is inactive.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
        ),
        update(
            "suspended_only_active_counts",
            "ready, succeeded, failed and suspended are ignored; active 0 passes.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
            cluster=(finished,),
        ),
        update(
            "suspended_one_violation_per_active_job",
            "One Forbidden per active replicated job, in status order.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
            cluster=(two_active,),
            expected=(active("node"), active("launcher")),
        ),
        Case(
            "audit_has_no_transition",
            "Audit (no operation, no oldObject): the transition rule does not fire.",
            trainjob(p, overrides=after),
            operation=AUDIT,
            cluster=(running,),
        ),
        Case(
            "create_with_scheduling_gate",
            "B: schedulingGates are set freely at CREATE.",
            trainjob(p, suspend=True, overrides=[override(gates=[KUEUE_GATE])]),
            cluster=(running,),
        ),
        update(
            "kueue_1_inject_gate_while_suspended",
            "B: Kueue injects its gate while the TrainJob is suspended.",
            trainjob(p, suspend=True),
            trainjob(p, suspend=True, overrides=[override(gates=[KUEUE_GATE])]),
            cluster=(finished,),
        ),
        update(
            "kueue_2_remove_gate_add_node_selector",
            "B: Kueue removes the gate and injects a nodeSelector.",
            trainjob(p, suspend=True, overrides=[override(gates=[KUEUE_GATE])]),
            trainjob(p, suspend=True, overrides=[override(gates=[], node_selector={"pool": "a100"})]),
            cluster=(finished,),
        ),
        update(
            "kueue_3_unsuspend",
            "B: Kueue unsuspends; the overrides do not change.",
            trainjob(p, suspend=True, overrides=[override(gates=[], node_selector={"pool": "a100"})]),
            trainjob(p, suspend=False, overrides=[override(node_selector={"pool": "a100"})]),
            cluster=(finished,),
        ),
        update(
            "gate_change_while_jobset_active",
            "B: a schedulingGates change while the JobSet runs is refused.",
            trainjob(p, suspend=True, overrides=[override(gates=[KUEUE_GATE])]),
            trainjob(p, suspend=True, overrides=[override(gates=[])]),
            cluster=(running,),
            expected=(active("node"),),
        ),
    ]


def _external_data_cases(p: Profile) -> list[Case]:
    """Provider answers and failures: only the external-data rule has them."""
    field = p.override_path

    def active(job: str) -> Expected:
        return Expected(field, "Forbidden", p.active_detail(job))

    def internal(error: str) -> Expected:
        return Expected(field, "Internal", _internal(error))

    running = jobset(statuses=[{"name": "node", "active": 2, "ready": 2}])
    before = [override(gates=["a"])]
    after = [override(gates=["b"])]

    def update(name: str, description: str, old: dict, new: dict, **kw: object) -> Case:
        return Case(name, description, new, operation="UPDATE", old_object=old, **kw)  # type: ignore[arg-type]

    return [
        update(
            "parameters_omitted_use_defaults",
            "A Constraint without parameters: external data, default provider.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
            cluster=(running,),
            parameters={},
            expected=(active("node"),),
        ),
        update(
            "provider_system_error_is_internal",
            "The provider is down: fail closed with Internal.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
            external_data={"responses": None, "errors": None, "status_code": 500, "system_error": "connection refused"},
            expected=(internal("connection refused"),),
        ),
        update(
            "provider_key_error_is_internal",
            "A per-key error (API failure): Internal naming the error.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
            external_data={
                "responses": [],
                "errors": [[lookup_key("provider_key_error_is_internal"), "jobsets.jobset.x-k8s.io is forbidden"]],
                "status_code": 200,
                "system_error": "",
            },
            expected=(internal("jobsets.jobset.x-k8s.io is forbidden"),),
        ),
        update(
            "provider_no_answer_is_internal",
            "A key the provider did not answer: Internal.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
            external_data={"responses": [], "errors": [], "status_code": 200, "system_error": ""},
            expected=(internal("the provider returned no answer for this key"),),
        ),
        update(
            "provider_duplicate_answers_are_internal",
            "Two different answers for the key (a misbehaving provider): Internal, never an evaluation error.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
            external_data={
                "responses": [
                    [
                        lookup_key("provider_duplicate_answers_are_internal"),
                        {"found": True, "activeReplicatedJobs": []},
                    ],
                    [
                        lookup_key("provider_duplicate_answers_are_internal"),
                        {"found": True, "activeReplicatedJobs": ["node"]},
                    ],
                ],
                "errors": [],
                "status_code": 200,
                "system_error": "",
            },
            expected=(internal("the provider returned more than one answer for this key"),),
        ),
        update(
            "provider_unexpected_value_is_internal",
            "A value not in the provider's contract: Internal.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
            external_data={
                "responses": [[lookup_key("provider_unexpected_value_is_internal"), "yes"]],
                "errors": [],
                "status_code": 200,
                "system_error": "",
            },
            expected=(internal("the provider returned an unexpected value"),),
        ),
        update(
            "cached_answer_status_code_zero_active",
            "A cached answer (status_code 0) is still an answer.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
            external_data={
                "responses": [
                    [
                        lookup_key("cached_answer_status_code_zero_active"),
                        {"found": True, "activeReplicatedJobs": ["node"]},
                    ]
                ],
                "errors": [],
                "status_code": 0,
                "system_error": "",
            },
            expected=(active("node"),),
        ),
        update(
            "cached_answer_status_code_zero_not_found",
            "A cached 'not found' (status_code 0): allowed.",
            trainjob(p, overrides=before, suspend=True),
            trainjob(p, overrides=after, suspend=True),
            external_data={
                "responses": [
                    [
                        lookup_key("cached_answer_status_code_zero_not_found"),
                        {"found": False, "activeReplicatedJobs": []},
                    ]
                ],
                "errors": [],
                "status_code": 0,
                "system_error": "",
            },
        ),
    ]


def inventory_cases(p: Profile) -> list[Case]:
    return with_runtime(_shared_cases(p))


def external_data_cases(p: Profile) -> list[Case]:
    return with_runtime(_shared_cases(p) + _external_data_cases(p))


_DESCRIPTION = (
    "On UPDATE of a TrainJob whose override list (podSpecOverrides in v2.0, podTemplateOverrides in v2.1, "
    "runtimePatches from v2.2) changed semantically (absent, null and [] are equal; order matters; quantities "
    "compare by value): the TrainJob must be suspended (v2.0 to v2.2: the new object; v2.3: the old or the new "
    "object), and the JobSet with the TrainJob's namespace and name must have no replicated job with "
    "active > 0. A JobSet that does not exist is inactive. schedulingGates are part of the overrides and follow "
    "the same rule. CREATE and audit are never checked."
)
_RATIONALE = (
    "The Trainer merges overrides into the JobSet it creates; changing them while Jobs run would leave "
    "running Pods out of step with the TrainJob. Kueue relies on the suspended window to inject and remove "
    "its scheduling gates and node selectors in separate requests, which this rule allows."
)
_MATCH = (MatchKind(("trainer.kubeflow.org",), ("TrainJob",)),)
_JOBSET = SyncKind("jobset.x-k8s.io", "v1alpha2", "JobSet")

INVENTORY_RULE = Rule(
    id="trainjob-override-mutability",
    kind="TrainerTrainJobOverrideMutability",
    title="TrainJob overrides change only while suspended and the JobSet is inactive (synced JobSets)",
    description=_DESCRIPTION
    + " The JobSet state comes from JobSets that Gatekeeper syncs into data.inventory (the bundle's SyncSet), "
    "always as fresh as Gatekeeper's watch; an unsynced JobSet counts as not found. The template needs no external "
    "data provider, so `gator verify` runs its suite.",
    rationale=_RATIONALE,
    spec_section="A, B",
    version="2.0.3",
    match=_MATCH,
    operations=("UPDATE",),
    parameters=(),
    data=DataNeeds(inventory=(_JOBSET,)),
    template="override_mutability.rego.j2",
    libs=("violations", "review", "quantity", "semantic", "jobset"),
    cases=inventory_cases,
    template_vars={"source": "Inventory"},
)

EXTERNAL_DATA_RULE = Rule(
    id="trainjob-override-mutability-external-data",
    kind="TrainerTrainJobOverrideMutabilityExternalData",
    title="TrainJob overrides change only while suspended and the JobSet is inactive (external data provider)",
    description=_DESCRIPTION
    + " The JobSet state comes from the external data provider (parameter providerName), looked up with a key "
    "unique to each admission request (<namespace>/<name>#<uid>) so that Gatekeeper's response cache never "
    "serves an older state. A failed lookup is an Internal violation (fail closed). gator cannot load this "
    "template (it has no external_data builtin): `trainer-policy test` runs its suite against the provider's "
    "own request handler.",
    rationale=_RATIONALE,
    spec_section="A, B",
    version="1.0.1",
    match=_MATCH,
    operations=("UPDATE",),
    parameters=(
        Parameter(
            "providerName",
            {"type": "string"},
            PROVIDER,
            "Name of the external data Provider object serving JobSet state.",
        ),
    ),
    data=DataNeeds(external_data_providers=(PROVIDER,)),
    template="override_mutability.rego.j2",
    libs=("violations", "review", "quantity", "semantic", "jobset_provider"),
    cases=external_data_cases,
    template_vars={"source": "ExternalData", "default_provider": PROVIDER},
    alternative_to="trainjob-override-mutability",
)
