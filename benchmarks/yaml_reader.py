"""The manifest reader (provider/reader.py) on a large YAML stream: CPU seconds to read every document, and a
bad stream with one error at its end (the error path must stay as bounded and linear as the first parse).

`python -m benchmarks.yaml_reader` writes results/yaml_reader.json; `--label NAME` keeps a run under another
name (e.g. one taken on main before a change, for the comparison in docs/performance.md)."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from benchmarks.common import write_result
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy_provider import reader

DOCUMENTS = 4_000
ROUNDS = 5


def _document(i: int) -> str:
    """A TrainJob-sized object with every kind of scalar a manifest holds (strings, ints, floats, bools, nulls)."""
    envs = "".join(f'        - name: VAR_{j}\n          value: "{j}"\n' for j in range(20))
    return (
        "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\n"
        f'metadata:\n  name: job-{i}\n  namespace: team-a\n  labels:\n    app: trainer\n    index: "{i}"\n'
        "spec:\n  runtimeRef:\n    name: torch-distributed\n    kind: ClusterTrainingRuntime\n"
        f"  suspend: false\n  trainer:\n    numNodes: {i % 7 + 1}\n    numProcPerNode: 1e0\n"
        "    image: registry.example.com/team/trainer:v1.2.3\n    args: [--lr, 0.001, --epochs, 10, --resume, null]\n"
        "    resourcesPerNode:\n      limits:\n        cpu: 4\n        memory: 16Gi\n        nvidia.com/gpu: 1\n"
        f"    env:\n{envs}"
    )


def build_stream(documents: int = DOCUMENTS) -> str:
    return "---\n".join(_document(i) for i in range(documents))


def _cpu(fn: Any) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.yaml_reader")
    parser.add_argument("--label", default="yaml_reader")
    args = parser.parse_args(argv)
    text = build_stream()
    bad = text + "\nmetadata: {name: [unclosed\n"
    limits = reader.ReadLimits(max_input_bytes=len(bad) + 1)

    def read() -> None:
        assert len(list(reader.parse(text, "bench.yaml", limits))) == DOCUMENTS

    def read_bad() -> None:
        try:
            list(reader.parse(bad, "bad.yaml", limits))
        except InputError:
            return
        raise AssertionError("the bad stream was read")

    good = [_cpu(read) for _ in range(ROUNDS)]
    error = [_cpu(read_bad) for _ in range(ROUNDS)]
    payload = {
        "bytes": len(text),
        "documents": DOCUMENTS,
        "rounds": ROUNDS,
        "read_cpu_s_median": statistics.median(good),
        "read_cpu_s_all": good,
        "error_at_end_cpu_s_median": statistics.median(error),
        "error_at_end_cpu_s_all": error,
    }
    print(payload)
    write_result(args.label, payload)


if __name__ == "__main__":
    main()
