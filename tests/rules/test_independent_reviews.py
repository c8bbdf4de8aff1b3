"""Hand-written admission requests with the specification's literal strings, independent of the catalog.

If the catalog's cases and the policies were both wrong in the same way, these would still fail.
"""

from __future__ import annotations

import copy

import pytest
import yaml

from kubeflow_trainer_policy.gatekeeper.external_data import InProcessProvider, ResponseCache
from kubeflow_trainer_policy.gatekeeper.review import AdmissionRequest, audit_request, request_from_document
from kubeflow_trainer_policy.paths import EXTERNAL_DATA_VARIANT
from kubeflow_trainer_policy_provider.certs import make_ca
from kubeflow_trainer_policy_provider.handler import ProviderHandler
from kubeflow_trainer_policy_provider.reader import Document
from kubeflow_trainer_policy_provider.sources import Lookup, StaticJobSetSource
from tests.admission import admission_review
from tests.rules import helpers

TRAINJOB = yaml.safe_load("""
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: llama
  namespace: ml-team
spec:
  runtimeRef:
    name: torch-distributed
  suspend: true
""")

JOBSET_RUNNING = yaml.safe_load("""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: llama
  namespace: ml-team
spec:
  suspend: true
status:
  replicatedJobsStatus:
  - {name: dataset-initializer, ready: 0, succeeded: 1, failed: 0, active: 0, suspended: 0}
  - {name: node, ready: 0, succeeded: 0, failed: 0, active: 3, suspended: 3}
""")

JOBSET_IDLE = yaml.safe_load("""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: llama
  namespace: ml-team
status:
  replicatedJobsStatus:
  - {name: node, ready: 2, succeeded: 0, failed: 1, active: 0, suspended: 1}
""")


def review_cli(tmp_path, review, *, objects=(), **kwargs):
    """`trainer-policy review` on a cluster that also holds the ClusterTrainingRuntime the TrainJobs reference
    (every bundle checks a TrainJob's runtime: trainjob-runtime-ref)."""
    return helpers.review_cli(tmp_path, review, objects=[*objects, runtime()], **kwargs)


def runner_review(profile, request, *, objects=(), **kwargs):
    return helpers.runner_review(profile, request, objects=[*objects, runtime()], **kwargs)


SUSPEND_V20 = "spec.podSpecOverrides: Forbidden: PodSpecOverrides can only be modified when the TrainJob is suspended"
ACTIVE_NODE_V20 = (
    "spec.podSpecOverrides: Forbidden: PodSpecOverrides cannot be modified when the JobSet's ReplicatedJob node "
    "is still active"
)
SUSPEND_V23 = (
    "spec.runtimePatches: Forbidden: RuntimePatches can only be modified when the TrainJob is suspended "
    "before or after the update"
)
ACTIVE_NODE_V23 = (
    "spec.runtimePatches: Forbidden: RuntimePatches cannot be modified when the JobSet's ReplicatedJob node "
    "is still active"
)


def trainjob(field: str = "podSpecOverrides", overrides=None, suspend=True, **spec) -> dict:
    obj = copy.deepcopy(TRAINJOB)
    if suspend is None:
        del obj["spec"]["suspend"]
    else:
        obj["spec"]["suspend"] = suspend
    if overrides is not None:
        obj["spec"][field] = overrides
    obj["spec"].update(spec)
    return obj


GATED = [{"targetJobs": [{"name": "node"}], "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}]
UNGATED_WITH_SELECTOR = [
    {"targetJobs": [{"name": "node"}], "nodeSelector": {"cloud.google.com/gke-accelerator": "a100"}}
]


# --- A + B: overrides and Kueue's sequence ---------------------------------------------------------------------


def test_kueue_sequence_of_separate_requests_is_admitted_while_the_jobset_is_inactive(tmp_path):
    created = trainjob()
    step1 = trainjob(overrides=GATED)  # Kueue injects its admission gate while suspended
    step2 = trainjob(overrides=UNGATED_WITH_SELECTOR)  # removes it and injects a nodeSelector
    step3 = trainjob(overrides=UNGATED_WITH_SELECTOR, suspend=False)  # unsuspends
    for jobsets in ([], [JOBSET_IDLE]):
        for old, new in ((created, step1), (step1, step2), (step2, step3)):
            result = review_cli(tmp_path, admission_review("UPDATE", new, old), objects=jobsets)
            assert result.exit_code == 0, (result.body, result.stderr)
            assert result.body == {"allowed": True, "violations": []}


def test_kueue_gate_change_is_refused_while_a_replicated_job_is_active(tmp_path):
    result = review_cli(
        tmp_path,
        admission_review("UPDATE", trainjob(overrides=UNGATED_WITH_SELECTOR), trainjob(overrides=GATED)),
        objects=[JOBSET_RUNNING],
    )
    assert result.exit_code == 1
    assert result.messages == [ACTIVE_NODE_V20]
    (violation,) = result.body["violations"]
    assert violation["details"] == {
        "field": "spec.podSpecOverrides",
        "type": "Forbidden",
        "detail": "PodSpecOverrides cannot be modified when the JobSet's ReplicatedJob node is still active",
    }


def test_v20_change_and_suspend_in_one_request_passes(tmp_path):
    old = trainjob(overrides=GATED, suspend=False)
    new = trainjob(overrides=UNGATED_WITH_SELECTOR, suspend=True)
    result = review_cli(tmp_path, admission_review("UPDATE", new, old))
    assert (result.exit_code, result.messages) == (0, [])


def test_v20_change_and_unsuspend_in_one_request_is_denied(tmp_path):
    old = trainjob(overrides=GATED, suspend=True)
    new = trainjob(overrides=UNGATED_WITH_SELECTOR, suspend=False)
    result = review_cli(tmp_path, admission_review("UPDATE", new, old))
    assert (result.exit_code, result.messages) == (1, [SUSPEND_V20])


def test_v20_missing_suspend_counts_as_not_suspended(tmp_path):
    result = review_cli(tmp_path, admission_review("UPDATE", trainjob(overrides=GATED, suspend=None), trainjob()))
    assert result.messages == [SUSPEND_V20]


def test_v23_suspended_before_or_after(tmp_path):
    gated = trainjob("runtimePatches", GATED, suspend=True)
    running = trainjob("runtimePatches", UNGATED_WITH_SELECTOR, suspend=False)
    # suspended before, unsuspended after: allowed from v2.3 while the JobSet is idle
    unsuspend = review_cli(tmp_path, admission_review("UPDATE", running, gated), objects=[JOBSET_IDLE], profile="v2.3")
    assert (unsuspend.exit_code, unsuspend.messages) == (0, [])
    # ... but not while a replicated job is active
    active = review_cli(tmp_path, admission_review("UPDATE", running, gated), objects=[JOBSET_RUNNING], profile="v2.3")
    assert active.messages == [ACTIVE_NODE_V23]
    # neither before nor after
    neither = trainjob("runtimePatches", GATED, suspend=False)
    denied = review_cli(tmp_path, admission_review("UPDATE", running, neither), profile="v2.3")
    assert denied.messages == [SUSPEND_V23]
    # the v2.0 field is not the v2.3 field
    ignored = review_cli(
        tmp_path, admission_review("UPDATE", trainjob(overrides=GATED, suspend=False), trainjob()), profile="v2.3"
    )
    assert ignored.messages == []


def test_semantic_comparison(tmp_path):
    def with_requests(cpu, memory):
        return [
            {
                "targetJobs": [{"name": "node"}],
                "containers": [{"name": "node", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
            }
        ]

    def review(old_overrides, new_overrides):
        old = trainjob(overrides=old_overrides, suspend=False)
        new = trainjob(overrides=new_overrides, suspend=False)
        return review_cli(tmp_path, admission_review("UPDATE", new, old), objects=[JOBSET_RUNNING]).messages

    assert review(with_requests("1", "1Gi"), with_requests("1000m", "1024Mi")) == []
    assert review(None, []) == []
    assert review([], None) == []
    assert review(with_requests("1", "1Gi"), with_requests("1500m", "1Gi")) == [SUSPEND_V20]
    two = [{"targetJobs": [{"name": "node"}]}, {"targetJobs": [{"name": "launcher"}]}]
    assert review(two, list(reversed(two))) == [SUSPEND_V20]
    # Empty values equal absent ones, but an added entry is a change even when it is empty
    # (equality.Semantic.DeepEqual never equates lists of different lengths).
    gated = [{"targetJobs": [{"name": "node"}], "schedulingGates": [], "nodeSelector": {}}]
    assert review([{"targetJobs": [{"name": "node"}]}], gated) == []
    assert review(None, [{}]) == [SUSPEND_V20]
    with_empty_gate = [{"targetJobs": [{"name": "node"}], "schedulingGates": [{}]}]
    assert review(with_empty_gate, [{"targetJobs": [{"name": "node"}]}]) == [SUSPEND_V20]


def test_create_is_never_checked(tmp_path):
    result = review_cli(
        tmp_path, admission_review("CREATE", trainjob(overrides=GATED, suspend=False)), objects=[JOBSET_RUNNING]
    )
    assert (result.exit_code, result.messages) == (0, [])


def test_one_violation_per_active_replicated_job(tmp_path):
    jobset = copy.deepcopy(JOBSET_RUNNING)
    jobset["status"]["replicatedJobsStatus"].append({"name": "launcher", "active": 1})
    result = review_cli(tmp_path, admission_review("UPDATE", trainjob(overrides=GATED), trainjob()), objects=[jobset])
    assert result.messages == sorted(
        [
            ACTIVE_NODE_V20,
            "spec.podSpecOverrides: Forbidden: PodSpecOverrides cannot be modified when the JobSet's ReplicatedJob "
            "launcher is still active",
        ]
    )


def test_default_install_reads_synced_jobsets(tmp_path):
    update = admission_review("UPDATE", trainjob(overrides=GATED), trainjob())
    assert review_cli(tmp_path, update, objects=[JOBSET_RUNNING]).messages == [ACTIVE_NODE_V20]
    assert review_cli(tmp_path, update, objects=[JOBSET_IDLE]).messages == []
    assert review_cli(tmp_path, update).messages == []  # not synced: not found, inactive


def test_external_data_variant_asks_the_provider(tmp_path):
    update = admission_review("UPDATE", trainjob(overrides=GATED), trainjob())
    running = review_cli(tmp_path, update, objects=[JOBSET_RUNNING], variant=EXTERNAL_DATA_VARIANT)
    assert running.messages == [ACTIVE_NODE_V20]
    assert [v["constraint"] for v in running.body["violations"]] == ["trainjob-override-mutability-external-data"]
    assert review_cli(tmp_path, update, objects=[JOBSET_IDLE], variant=EXTERNAL_DATA_VARIANT).messages == []


def test_provider_down_is_an_internal_violation(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_bytes(make_ca().cert_pem)  # a real CA (bad TLS files are refused up front); the connection is refused
    update = admission_review("UPDATE", trainjob(overrides=GATED), trainjob())
    result = review_cli(
        tmp_path,
        update,
        extra=("--provider-url", "https://127.0.0.1:9/", "--ca-file", str(ca)),
        variant=EXTERNAL_DATA_VARIANT,
    )
    assert result.exit_code == 1
    (violation,) = result.body["violations"]
    assert violation["details"]["type"] == "Internal"
    assert violation["details"]["field"] == "spec.podSpecOverrides"
    assert violation["msg"].startswith(
        "spec.podSpecOverrides: Internal: failed to get the state of JobSet ml-team/llama from external data "
        "provider trainer-jobset-provider: failed to send external data request"
    )


class FailingSource:
    def lookup(self, namespace: str, name: str) -> Lookup:
        return Lookup(error=f'jobsets.jobset.x-k8s.io "{name}" is forbidden: User cannot get resource')


def _request(operation: str, obj: dict, old: dict | None = None) -> AdmissionRequest:
    return request_from_document(Document("test", admission_review(operation, obj, old)))


def test_per_key_error_is_an_internal_violation():
    providers = {"trainer-jobset-provider": InProcessProvider(ProviderHandler(FailingSource()).handle)}
    result = runner_review(
        "v2.0",
        _request("UPDATE", trainjob(overrides=GATED), trainjob()),
        providers=providers,
        variant=EXTERNAL_DATA_VARIANT,
    )
    assert result.errors == []
    assert [v.msg for v in result.violations] == [
        "spec.podSpecOverrides: Internal: failed to get the state of JobSet ml-team/llama from external data "
        'provider trainer-jobset-provider: jobsets.jobset.x-k8s.io "llama" is forbidden: User cannot get resource'
    ]


def test_cached_answer_with_status_code_zero_decides_the_same():
    handler = ProviderHandler(StaticJobSetSource([JOBSET_RUNNING]))
    provider = InProcessProvider(handler.handle)
    cache = ResponseCache()
    request = _request("UPDATE", trainjob(overrides=GATED), trainjob())
    providers = {"trainer-jobset-provider": provider}
    first = runner_review("v2.0", request, providers=providers, cache=cache, variant=EXTERNAL_DATA_VARIANT)
    second = runner_review("v2.0", request, providers=providers, cache=cache, variant=EXTERNAL_DATA_VARIANT)
    assert [v.msg for v in first.violations] == [v.msg for v in second.violations] == [ACTIVE_NODE_V20]


@pytest.mark.parametrize(
    "obj",
    [
        trainjob(overrides=GATED, suspend=False),
        yaml.safe_load("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: x}\nspec: null\n"),
    ],
)
def test_audit_never_judges_an_override_transition(obj):
    """Gatekeeper's audit review (operation "", oldObject null): no transition, no lookup, no error."""
    handler = ProviderHandler(StaticJobSetSource([JOBSET_RUNNING]))
    for variant in (None, EXTERNAL_DATA_VARIANT):
        result = runner_review(
            "v2.0",
            audit_request(obj),
            providers={"trainer-jobset-provider": InProcessProvider(handler.handle)},
            objects=[JOBSET_RUNNING],
            variant=variant,
        )
        assert result.errors == []
        assert [v.msg for v in result.violations if "override-mutability" in v.constraint] == []
        # A TrainJob without spec has no runtime: only trainjob-runtime-ref (a stored-object rule) reports it.
        assert {v.constraint for v in result.violations} <= {"trainjob-runtime-ref"}


# --- C: managedBy ------------------------------------------------------------------------------------------------

TRAINJOB_INVALID = (
    "spec.managedBy: Invalid: ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
    "kueue.x-k8s.io/multikueue if set"
)


def test_trainjob_managed_by(tmp_path):
    def review(operation, new_value, old_value="unset"):
        new = trainjob(managedBy=new_value) if new_value != "unset" else trainjob()
        old = None
        if operation == "UPDATE":
            old = trainjob(managedBy=old_value) if old_value != "unset" else trainjob()
        return review_cli(tmp_path, admission_review(operation, new, old)).messages

    assert review("CREATE", "trainer.kubeflow.org/trainjob-controller") == []
    assert review("CREATE", "kueue.x-k8s.io/multikueue") == []
    assert review("CREATE", "unset") == []
    assert review("CREATE", "example.com/mine") == [TRAINJOB_INVALID]
    immutable = "spec.managedBy: Invalid: ManagedBy value is immutable"
    assert review("UPDATE", "kueue.x-k8s.io/multikueue", "trainer.kubeflow.org/trainjob-controller") == [immutable]
    assert review("UPDATE", "unset", "kueue.x-k8s.io/multikueue") == [immutable]
    assert review("UPDATE", "kueue.x-k8s.io/multikueue", "unset") == [immutable]
    assert review("UPDATE", "kueue.x-k8s.io/multikueue", "kueue.x-k8s.io/multikueue") == []


def test_trainjob_managed_by_site_parameter(tmp_path):
    parameters = {
        "trainjob-managed-by": {"allowedValues": ["trainer.kubeflow.org/trainjob-controller", "example.com/mine"]}
    }
    ok = review_cli(tmp_path, admission_review("CREATE", trainjob(managedBy="example.com/mine")), parameters=parameters)
    assert ok.messages == []
    bad = review_cli(
        tmp_path, admission_review("CREATE", trainjob(managedBy="kueue.x-k8s.io/multikueue")), parameters=parameters
    )
    assert bad.messages == [
        "spec.managedBy: Invalid: ManagedBy must be trainer.kubeflow.org/trainjob-controller or example.com/mine if set"
    ]


@pytest.mark.parametrize("kind", ["PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob"])
def test_v1_job_managed_by(tmp_path, kind):
    def job(value=None):
        run_policy = {} if value is None else {"managedBy": value}
        return {
            "apiVersion": "kubeflow.org/v1",
            "kind": kind,
            "metadata": {"name": "j", "namespace": "ml-team"},
            "spec": {"runPolicy": run_policy},
        }

    assert review_cli(tmp_path, admission_review("CREATE", job("kubeflow.org/training-operator"))).messages == []
    assert review_cli(tmp_path, admission_review("CREATE", job("example.com/x"))).messages == [
        "spec.runPolicy.managedBy: Invalid: ManagedBy must be kubeflow.org/training-operator or "
        "kueue.x-k8s.io/multikueue if set"
    ]
    assert review_cli(tmp_path, admission_review("UPDATE", job(), job("kueue.x-k8s.io/multikueue"))).messages == [
        "spec.runPolicy.managedBy: Invalid: ManagedBy value is immutable"
    ]


# --- D: runtime replicas -----------------------------------------------------------------------------------------

RUNTIME = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: {kind}
metadata:
  name: torch-distributed
  labels: {labels}
spec:
  template:
    spec:
      replicatedJobs:
      - name: dataset-initializer
        replicas: {init_replicas}
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: dataset-initializer
          spec:
            template:
              spec:
                containers:
                - name: dataset-initializer
                  image: busybox
      - name: launcher
        replicas: {launcher_replicas}
        template:
          spec:
            template:
              spec:
                containers: [{{name: launcher, image: busybox}}]
      - name: node
        template:
          metadata:
            labels:
              trainer.kubeflow.org/trainjob-ancestor-step: trainer
          spec:
            template:
              spec:
                initContainers: [{{name: node, image: busybox}}]
                containers: [{{name: {node_container}, image: busybox}}]
"""


def runtime(kind="ClusterTrainingRuntime", labels="{}", init_replicas=1, launcher_replicas=1, node_container="node"):
    return yaml.safe_load(
        RUNTIME.format(
            kind=kind,
            labels=labels,
            init_replicas=init_replicas,
            launcher_replicas=launcher_replicas,
            node_container=node_container,
        )
    )


@pytest.mark.parametrize("kind", ["TrainingRuntime", "ClusterTrainingRuntime"])
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_runtime_replicas(tmp_path, kind, operation):
    old = runtime(kind) if operation == "UPDATE" else None
    assert review_cli(tmp_path, admission_review(operation, runtime(kind), old)).messages == []
    result = review_cli(tmp_path, admission_review(operation, runtime(kind, init_replicas=2, launcher_replicas=3), old))
    assert result.exit_code == 1
    assert result.messages == [
        "spec.template.spec.replicatedJobs[0].replicas: Invalid: always must be 1",
        "spec.template.spec.replicatedJobs[1].replicas: Invalid: always must be 1",
    ]
    # from v2.1 only ancestor labels reserve a job: the launcher is free
    v23 = review_cli(
        tmp_path, admission_review(operation, runtime(kind, init_replicas=2, launcher_replicas=3), old), profile="v2.3"
    )
    assert v23.messages == ["spec.template.spec.replicatedJobs[0].replicas: Invalid: always must be 1"]


def test_runtime_v23_container_requirement_and_disabled_label(tmp_path):
    missing = runtime(node_container="worker")
    assert review_cli(tmp_path, admission_review("CREATE", missing)).messages == []
    assert review_cli(tmp_path, admission_review("CREATE", missing), profile="v2.3").messages == [
        "spec.template.spec.replicatedJobs[2].template.spec.template.spec.containers: Invalid: "
        "must contain the required container for the ancestor: trainer"
    ]
    disabled = runtime(
        labels="{trainer.kubeflow.org/webhook-validation: disabled}", init_replicas=5, node_container="worker"
    )
    assert review_cli(tmp_path, admission_review("CREATE", disabled), profile="v2.3").messages == []
    assert review_cli(tmp_path, admission_review("CREATE", disabled)).messages == [
        "spec.template.spec.replicatedJobs[0].replicas: Invalid: always must be 1"
    ]
