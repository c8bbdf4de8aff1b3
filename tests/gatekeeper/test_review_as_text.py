"""The combined engine receives the review as JSON text and decodes it once (gatekeeper/runner.py): the decisions
and messages are those of the review handed over as a value, values JSON cannot carry keep the old path, and a
failing decode is an error, never a lenient builtin."""

from __future__ import annotations

import pytest

from kubeflow_trainer_policy.catalog.trainjob_fixtures import container, job, override_entry, runtime, trainjob
from kubeflow_trainer_policy.engine import EmbeddedOpaEngine
from kubeflow_trainer_policy.engine.lenient import LenientBuiltins
from kubeflow_trainer_policy.errors import EngineError
from kubeflow_trainer_policy.gatekeeper import runner as runner_module
from kubeflow_trainer_policy.gatekeeper.policy_set import load_policy_set
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner, review_text
from kubeflow_trainer_policy.paths import gatekeeper_bundle_dir
from kubeflow_trainer_policy.profiles import get_profile
from tests.gatekeeper.helpers import request


def _violations(result) -> list[dict]:
    return [v.as_json() for v in result.violations]


@pytest.mark.parametrize("profile", ["v2.0", "v2.2"])
def test_the_review_as_text_decides_as_the_review_as_a_value(profile: str, monkeypatch: pytest.MonkeyPatch) -> None:
    p = get_profile(profile)
    rt = runtime("torch-distributed")
    rt["spec"]["template"]["spec"]["replicatedJobs"].append(job("worker", containers=["node"]))
    entries = [
        override_entry(p, ["worker"], containers=[container("node", [{"name": "V", "value": "1"}])]),
        override_entry(p, ["missing"], containers=[container("ghost")]),
    ]
    old = trainjob(p, overrides=entries[:1], extra={"suspend": False})
    new = trainjob(p, overrides=entries, extra={"suspend": False})
    for obj in (old, new):
        obj["metadata"]["namespace"] = "team-a"
    review = request("UPDATE", new, old)
    with GatekeeperRunner(load_policy_set([gatekeeper_bundle_dir(profile)]), objects=[rt]) as runner:
        assert review_text(review.as_input()) is not None
        as_text = runner.review(review)
        monkeypatch.setattr(runner_module, "review_text", lambda _: None)
        as_value = runner.review(review)
    assert not as_text.errors and not as_value.errors
    assert len(as_text.violations) >= 2  # a missing job, and overrides changed while not suspended
    assert _violations(as_text) == _violations(as_value)


def test_values_json_cannot_carry_keep_the_engines_own_conversion() -> None:
    assert review_text({"object": {"spec": {"x": float("nan")}}}) is None
    assert review_text({"object": {"spec": {"x": float("inf")}}}) is None
    assert review_text({"object": {"name": "\ud800"}}) is None
    assert review_text({"object": {"name": "caf\u00e9", "n": 1}}) == '{"object": {"name": "café", "n": 1}}'
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic  # encoded without a circularity check: the recursion limit ends it
    assert review_text({"object": cyclic}) is None


def test_a_failing_decode_is_an_error_not_an_undefined_builtin() -> None:
    query = "x := json.unmarshal(input){}".format
    with EmbeddedOpaEngine() as engine:
        strict = LenientBuiltins(engine, EmbeddedOpaEngine, strict=frozenset({"json.unmarshal"}))
        with pytest.raises(EngineError, match=r"json\.unmarshal"):
            strict.evaluate(query, "{not json")
        strict.close()
    with EmbeddedOpaEngine() as engine:  # the same failure in a policy's own call is lenient, as in Gatekeeper
        lenient = LenientBuiltins(engine, EmbeddedOpaEngine)
        assert lenient.evaluate(query, "{not json").bindings == []
        assert [f.builtin for f in lenient.take_failures()] == ["json.unmarshal"]
        lenient.close()


def test_the_engine_reads_only_the_text_of_the_review_being_evaluated() -> None:
    p = get_profile("v2.0")
    review = request("CREATE", trainjob(p), None)
    with GatekeeperRunner(load_policy_set([gatekeeper_bundle_dir("v2.0")])) as runner:
        assert not runner.review(review).errors
        assert runner.combined is not None
        engine = runner.combined.engine
        for number in (0, 1, 2):  # after its review, no number reads a text: not the last one, not a stale one
            with pytest.raises(EngineError, match="review_text"):
                engine.eval_query(f"x := data.{runner_module.DECODED_REVIEW}", {"review": number})
