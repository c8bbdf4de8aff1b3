"""Issue 29, item 5: what made override mutability cost most at large sizes is gone, counted in OPA's own trace
events (deterministic, unlike time on a shared machine). benchmarks/worst_case_review.py measures every template at
the CRD bounds and at a quarter of them (linearity), with the trivial template as the same run's baseline."""

from __future__ import annotations

from opa_bindings import OpaEngine

from kubeflow_trainer_policy.render.rego import lib


def _trace_events(engine: OpaEngine, query: str, payload: object) -> int:
    engine.eval_query(query, payload, trace=True)
    return len(engine.last_trace or [])


def test_lists_of_different_lengths_are_compared_without_walking_them() -> None:
    """An UPDATE that adds or drops one override: the old and new lists differ in length, which settles it; they
    used to be walked whole for facts (1.5 s CPU at 4,000 overrides)."""
    engine = OpaEngine()
    for i, name in enumerate(["review", "nanos", "semantic"]):
        engine.add_policy(f"lib{i}.rego", lib(name).source)
    query = "x := data.lib.trainer.semantic.same(input.a, input.b)"
    counts = []
    for n in (50, 400):
        entries = [
            {"targetJobs": [{"name": f"w{i}"}], "containers": [{"name": "c", "env": [{"name": "A"}]}]} for i in range(n)
        ]
        counts.append(_trace_events(engine, query, {"a": entries[:-1], "b": entries}))
        assert engine.eval_query(query, {"a": entries[:-1], "b": entries}) == []  # not the same
    assert counts[0] == counts[1], counts
