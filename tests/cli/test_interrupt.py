"""Issue 40, item 5: Ctrl-C during a large review ended in SIGABRT with a Go crash dump (2 of 11 tries).

The embedded engine evaluates in Go and calls back into Python for custom builtins; a KeyboardInterrupt raised
inside such a callback gave Go a garbage pointer (SIGSEGV in runtime.gostring, then abort) or was swallowed
("Exception ignored on calling ctypes callback function") and the review went on to exit 1. Here a real
`trainer-policy review` process gets a real SIGINT once the engine is loaded (its library mapped), a little
later each try, and must exit 130 with exactly one line on stderr, no Go dump, no traceback, no verdict."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.cli.helpers import PROJECT_ROOT

ENGINE_LIBRARY = "libopabridge"
"""The Go shared library of opa-golib-python-bindings: mapped once the review loads the engine."""
INTERRUPTED = "trainer-policy review: interrupted"
CRASH_SIGNS = ("goroutine", "fatal error", "SIGSEGV", "SIGABRT", "Traceback", "Exception ignored")

# A rule that calls to_number on every entry: "1e400" fails it, so the runner evaluates again with a Python
# replacement of to_number, called from Go once per entry. Most of such a review's time is spent in those calls.
MANY_CALLBACKS_REGO = """package k8smanynumbers

violation contains {"msg": sprintf("entry %d is over 64", [i])} if {
	some i, entry in input.review.object.spec.entries
	to_number(entry) > 64
}
"""


def _constraints(path: Path) -> Path:
    template = {
        "apiVersion": "templates.gatekeeper.sh/v1",
        "kind": "ConstraintTemplate",
        "metadata": {"name": "k8smanynumbers"},
        "spec": {
            "crd": {"spec": {"names": {"kind": "K8sManyNumbers"}}},
            "targets": [
                {
                    "target": "admission.k8s.gatekeeper.sh",
                    "code": [{"engine": "Rego", "source": {"version": "v1", "rego": MANY_CALLBACKS_REGO}}],
                }
            ],
        },
    }
    constraint = {
        "apiVersion": "constraints.gatekeeper.sh/v1beta1",
        "kind": "K8sManyNumbers",
        "metadata": {"name": "many"},
        "spec": {"match": {"kinds": [{"apiGroups": ["trainer.kubeflow.org"], "kinds": ["TrainJob"]}]}},
    }
    path.write_text(yaml.safe_dump_all([template, constraint]))
    return path


def _many_callbacks(folder: Path) -> list[str]:
    entries = ["1e400" if i % 2 else str(i) for i in range(40_000)]
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "job", "namespace": "team-a"},
        "spec": {"entries": entries},
    }
    (folder / "many.json").write_text(json.dumps(job))
    return [str(folder / "many.json"), "--constraints", str(_constraints(folder / "constraints.yaml"))]


def _large_update(folder: Path) -> list[str]:
    """An UPDATE of a 6 MB TrainJob against the shipped v2.0 profile (what the issue's reporter interrupted)."""
    n = 8000

    def job(tag: str) -> dict:
        return {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "job", "namespace": "team-a", "labels": {f"l{i}": f"v{i}" for i in range(n)}},
            "spec": {
                "runtimeRef": {"name": "torch-distributed"},
                "trainer": {"numNodes": 2, "env": [{"name": f"E{i}", "value": f"{tag}{i}"} for i in range(n)]},
                "suspend": True,
                "podSpecOverrides": [
                    {
                        "targetJobs": [{"name": f"node{i}"}],
                        "nodeSelector": {f"k{j}": tag for j in range(20)},
                        "schedulingGates": [{"name": f"g{i}{tag}"}],
                    }
                    for i in range(n)
                ],
            },
        }

    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u",
            "kind": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJob"},
            "resource": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "resource": "trainjobs"},
            "operation": "UPDATE",
            "userInfo": {"username": "someone"},
            "object": job("a"),
            "oldObject": job("b"),
            "name": "job",
            "namespace": "team-a",
        },
    }
    (folder / "large.json").write_text(json.dumps(review))
    return [str(folder / "large.json")]


def _command() -> list[str]:
    script = Path(sys.executable).with_name("trainer-policy")  # what a user runs, when installed
    return [str(script)] if script.exists() else [sys.executable, "-m", "kubeflow_trainer_policy.cli.main"]


def _engine_loaded(pid: int) -> bool:
    try:
        return ENGINE_LIBRARY in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _interrupt(args: list[str], delay: float) -> tuple[int, str, str]:
    """Start the review, wait for the engine to be loaded, then `delay` seconds more, then Ctrl-C (SIGINT)."""
    process = subprocess.Popen(
        [*_command(), "review", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=PROJECT_ROOT,
    )
    try:
        deadline = time.monotonic() + 120
        while not _engine_loaded(process.pid):
            assert process.poll() is None, f"exited {process.returncode} before loading the engine"
            assert time.monotonic() < deadline, "the engine was never loaded"
            time.sleep(0.01)
        time.sleep(delay)
        assert process.poll() is None, "the review finished before it could be interrupted: make the input larger"
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, stdout, stderr


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="watches /proc/<pid>/maps for the engine")
@pytest.mark.parametrize(
    ("build", "delays"),
    [(_many_callbacks, (0.8, 1.2, 1.6)), (_large_update, (0.2, 0.6))],
    ids=["many-callbacks-from-go", "large-update-shipped-profile"],
)
def test_ctrl_c_mid_evaluation_exits_130_with_one_line(tmp_path: Path, build, delays: tuple[float, ...]) -> None:
    args = build(tmp_path)
    for delay in delays:
        code, stdout, stderr = _interrupt(args, delay)
        assert not any(sign in stderr for sign in CRASH_SIGNS), (delay, code, stderr[:3000])
        assert (code, stderr.strip(), stdout) == (130, INTERRUPTED, ""), (delay, stderr[:3000])
