"""Spec A+B with the JobSet state from the external data provider: the same cases as
trainjob-override-mutability plus the provider's answers and failures (both rules use lib.trainer.mutability)."""

from __future__ import annotations

from kubeflow_trainer_policy.catalog import cases_of
from kubeflow_trainer_policy.catalog.fixtures import jobset, override, trainjob
from kubeflow_trainer_policy.catalog.model import Case, Expected, case_uid
from kubeflow_trainer_policy.catalog.trainjob_fixtures import with_runtime
from kubeflow_trainer_policy.profiles import Profile

_inventory = cases_of("trainjob-override-mutability")
KEY, RELEASES, shared_cases = _inventory.KEY, _inventory.RELEASES, _inventory.shared_cases

PROVIDER = "trainer-jobset-provider"


def _internal(error: str, provider: str = PROVIDER) -> str:
    return f"failed to get the state of JobSet {KEY} from external data provider {provider}: {error}"


def lookup_key(case_name: str) -> str:
    """The key the external-data rule sends for a case's request (see its src.rego's lookup_key)."""
    return f"{KEY}#{case_uid(case_name)}"


def _external_data_cases(p: Profile) -> list[Case]:
    """Provider answers and failures: only the external-data rule has them."""
    field = p.override_path

    def active(job: str) -> Expected:
        return Expected(field, "Forbidden", RELEASES[p.name].active_detail(job))

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


def external_data_cases(p: Profile) -> list[Case]:
    return with_runtime(shared_cases(p) + _external_data_cases(p))


def cases(p: Profile) -> list[Case]:
    return external_data_cases(p)
