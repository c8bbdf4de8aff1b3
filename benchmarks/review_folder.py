"""`trainer-policy review FOLDER` of 1,000 manifests in one process, its time per manifest next to
`python -c pass` (and one single-manifest review process) measured in the same run.

A CI job reviews a repository's folder of manifests with one command: it pays the process's fixed cost
(interpreter, imports, compiling the profile's templates) once, then each manifest's evaluation. The folder
holds 100 multi-document files of 10 documents each, cycling through every admission-request and bare-object
sample of the v2.0 bundle (CREATE, UPDATE, DELETE and audit cases of every rule), with every sample inventory
as --objects. Commands run in interleaved rounds so each sees the same machine load.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import yaml

from benchmarks.cli_startup import PYCACHE_VAR, _child_environment, _trainer_policy
from benchmarks.common import write_result
from kubeflow_trainer_policy.engine.fact_cache import ENV_VAR

PROJECT_ROOT = Path(__file__).resolve().parents[1]
BUNDLE = PROJECT_ROOT / "bundles/gatekeeper/v2.0"
MANIFESTS = 1000
PER_FILE = 10
ROUNDS = 3


def _samples() -> tuple[list[dict], list[Path]]:
    reviews, inventories = [], []
    for path in sorted(BUNDLE.glob("*/samples/*.yaml")):
        if path.stem.startswith("cluster-"):
            inventories.append(path)
        else:
            reviews += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return reviews, inventories


def _folder(root: Path) -> tuple[Path, list[Path]]:
    reviews, inventories = _samples()
    folder = root / "manifests"
    folder.mkdir()
    cycle = itertools.cycle(reviews)
    for index in range(MANIFESTS // PER_FILE):
        documents = [next(cycle) for _ in range(PER_FILE)]
        (folder / f"manifests-{index:03d}.yaml").write_text(yaml.safe_dump_all(documents))
    objects = root / "objects.yaml"
    objects.write_text("".join(f"---\n{p.read_text()}\n" for p in inventories))
    return folder, [objects]


def _run(argv: list[str]) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, cwd=PROJECT_ROOT, timeout=900, env=_child_environment({}))
    return time.perf_counter() - start, proc


def measure() -> dict[str, object]:
    with (
        tempfile.TemporaryDirectory(prefix="review-folder-") as root,
        tempfile.TemporaryDirectory(prefix="review-folder-facts-") as cache,
        tempfile.TemporaryDirectory(prefix="review-folder-pycache-") as pycache,
        mock.patch.dict(os.environ, {ENV_VAR: cache, PYCACHE_VAR: pycache}),
    ):
        folder, objects = _folder(Path(root))
        first = next(iter(sorted(folder.glob("*.yaml"))))
        single = Path(root) / "single.yaml"
        single.write_text(yaml.safe_dump(next(d for d in yaml.safe_load_all(first.read_text()) if d)))
        flags = ["--objects", *map(str, objects), "-o", "json"]
        commands = {
            "python_pass": [sys.executable, "-c", "pass"],
            "review_one_manifest": [*_trainer_policy(), "review", str(single), *flags],
            "review_folder": [*_trainer_policy(), "review", str(folder), *flags],
        }
        _, proc = _run(commands["review_folder"])  # warm-up: .pyc files, fact cache, page cache
        summary = json.loads(proc.stdout)["summary"]
        if proc.returncode not in (0, 1) or summary["objects"] != MANIFESTS or summary["error"]:
            raise RuntimeError(f"review of the folder failed (exit {proc.returncode}): {proc.stderr.decode()[-500:]}")
        _run(commands["review_one_manifest"])
        samples: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(ROUNDS):
            for name, argv in commands.items():
                elapsed, proc = _run(argv)
                if proc.returncode not in (0, 1):
                    raise RuntimeError(f"{name} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
                samples[name].append(elapsed)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    per_manifest = medians["review_folder"] / MANIFESTS
    return {
        "manifests": MANIFESTS,
        "files": MANIFESTS // PER_FILE,
        "outcomes": summary,
        "rounds": ROUNDS,
        **{name: {"median_s": medians[name], "min_s": min(v), "max_s": max(v)} for name, v in samples.items()},
        "per_manifest_ms": per_manifest * 1000,
        "per_manifest_over_python_pass": per_manifest / medians["python_pass"],
        "folder_over_one_manifest_processes": medians["review_folder"] / (MANIFESTS * medians["review_one_manifest"]),
    }


def main() -> None:
    result = measure()
    path = write_result("review_folder", result)
    print(
        f"review of {MANIFESTS} manifests in one process: {result['review_folder']['median_s']:.2f} s, "  # type: ignore[index]
        f"{result['per_manifest_ms']:.2f} ms per manifest; python -c pass "
        f"{result['python_pass']['median_s'] * 1000:.1f} ms; one-manifest review process "  # type: ignore[index]
        f"{result['review_one_manifest']['median_s'] * 1000:.0f} ms -> {path}"  # type: ignore[index]
    )


if __name__ == "__main__":
    main()
