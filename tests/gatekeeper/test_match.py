"""Gatekeeper's match semantics, case by case (pkg/mutation/match)."""

from __future__ import annotations

import pytest

from kubeflow_trainer_policy.gatekeeper.match import MatchError, object_matches, request_matches, wildcard_matches
from tests.gatekeeper.helpers import trainjob

NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"tier": "gpu"}}}
CLUSTER_RUNTIME = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch", "labels": {"x": "y"}},
}


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("kube-*", "kube-system", True),
        ("*-system", "gatekeeper-system", True),
        ("team", "team-a", False),
        ("team-a", "team-a", True),
        ("*", "anything", True),
    ],
)
def test_wildcards(pattern, value, expected):
    assert wildcard_matches(pattern, value) is expected


@pytest.mark.parametrize(
    ("kinds", "expected"),
    [
        ([], True),
        ([{"apiGroups": ["trainer.kubeflow.org"], "kinds": ["TrainJob"]}], True),
        ([{"apiGroups": ["*"], "kinds": ["TrainJob"]}], True),
        ([{"apiGroups": ["trainer.kubeflow.org"], "kinds": []}], True),
        ([{"apiGroups": ["kubeflow.org"], "kinds": ["TrainJob"]}], False),
        (
            [{"apiGroups": ["trainer.kubeflow.org"], "kinds": ["PyTorchJob"]}, {"apiGroups": [""], "kinds": ["*"]}],
            False,
        ),
    ],
)
def test_kinds(kinds, expected):
    assert object_matches({"kinds": kinds}, trainjob(), None) is expected


def test_scope():
    assert object_matches({"scope": "Namespaced"}, trainjob(), None)
    assert not object_matches({"scope": "Cluster"}, trainjob(), None)
    assert object_matches({"scope": "Cluster"}, CLUSTER_RUNTIME, None)
    assert object_matches({"scope": "Cluster"}, NS, None), "a Namespace is cluster-scoped"


def test_namespaces_do_not_disqualify_cluster_scoped_objects():
    assert object_matches({"namespaces": ["team-*"]}, CLUSTER_RUNTIME, None)
    assert object_matches({"excludedNamespaces": ["*"]}, CLUSTER_RUNTIME, None)
    assert object_matches({"namespaces": ["team-a"]}, NS, None), "a Namespace matches by its own name"


def test_label_selector():
    job = trainjob(labels={"team": "a", "env": "prod"})
    assert object_matches({"labelSelector": {"matchLabels": {"team": "a"}}}, job, None)
    assert not object_matches({"labelSelector": {"matchLabels": {"team": "b"}}}, job, None)
    expressions = [
        {"key": "env", "operator": "In", "values": ["prod", "stage"]},
        {"key": "legacy", "operator": "DoesNotExist"},
    ]
    assert object_matches({"labelSelector": {"matchExpressions": expressions}}, job, None)
    assert not object_matches(
        {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}}, job, None
    )
    with pytest.raises(MatchError, match="unknown selector operator"):
        object_matches({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}, job, None)


def test_namespace_selector_needs_the_namespace_object():
    selector = {"namespaceSelector": {"matchLabels": {"tier": "gpu"}}}
    assert object_matches(selector, trainjob(), NS)
    assert not object_matches(selector, trainjob(), {**NS, "metadata": {"name": "team-a", "labels": {}}})
    assert object_matches(selector, CLUSTER_RUNTIME, None)
    with pytest.raises(MatchError, match=r"namespace selector for namespace-scoped object .* but missing Namespace"):
        object_matches(selector, trainjob(), None)


def test_name_match():
    assert object_matches({"name": "job*"}, trainjob("job1"), None)
    assert not object_matches({"name": "other"}, trainjob("job1"), None)


def test_request_matches_object_or_old_object():
    match = {"labelSelector": {"matchLabels": {"team": "a"}}}
    review = {"object": trainjob(labels={}), "oldObject": trainjob(labels={"team": "a"})}
    assert request_matches(match, review, None)
    with pytest.raises(MatchError, match="neither object nor old object"):
        request_matches(match, {}, None)
