"""The long differential campaign (`make oracle`): N generated requests per profile judged by the Trainer oracle
of the release and by the profile's bundle. Writes every disagreement to the corpus folder (one JSON file each,
named by content), and reports per profile: requests, disagreements explained per deviation, unexplained ones,
listed deviations not seen, and the checks of docs/upstream/checks.md that no request reached. Exit 1 when a
disagreement is unexplained.

    python -m tests.oracle.campaign [--requests N] [--corpus DIR] [--profiles v2.0 v2.3] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings

from kubeflow_trainer_policy.oracle.build import RELEASE_OF_PROFILE
from kubeflow_trainer_policy.oracle.differential import Differential, write_case
from tests.oracle import checks as check_table
from tests.oracle import deviations as deviation_list
from tests.oracle.strategies import Request, profile, requests


def save_witnesses(report: dict, corpus: Path, folder: Path) -> None:
    """The smallest witness of each reached check, as tests/oracle/witnesses/<profile>-<id>.json."""
    folder.mkdir(parents=True, exist_ok=True)
    for check_id in report["checks_reached"]:
        files = sorted((corpus / "witnesses" / check_id).glob("*.json"), key=lambda p: p.stat().st_size)
        body = json.loads(files[0].read_text())
        name = report["profile"]
        witness = {"profile": name, "check": check_id, "review": body["review"], "objects": body["objects"]}
        (folder / f"{name}-{check_id}.json").write_text(json.dumps(witness, indent=1, sort_keys=True) + "\n")


def run_profile(name: str, count: int, corpus: Path, seed_value: int) -> dict:
    deviations = deviation_list.load()
    checks = [c for c in check_table.load() if RELEASE_OF_PROFILE[name] in c.tags]
    reached: dict[str, list[str]] = {c.id: [] for c in checks}
    seen: Counter[str] = Counter()
    unexplained: list[str] = []
    stats = Counter()
    differential = Differential(name, RELEASE_OF_PROFILE[name])
    started = time.monotonic()

    @seed(seed_value)
    @settings(
        max_examples=count,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(requests(profile(name)))
    def one(request: Request) -> None:
        verdict = differential.judge(request.review, request.objects, deviations)
        stats["requests"] += 1
        stats["denied by the Trainer"] += not verdict.oracle.allowed
        stats["not compared (schema refuses)"] += verdict.skipped
        for check in checks:
            if len(reached[check.id]) < 3 and check.reached_by(verdict.oracle):
                reached[check.id].append(
                    write_case(corpus / "witnesses" / check.id, verdict, request.review, request.objects).name
                )
        if stats["requests"] % 1000 == 0:
            print(
                f"{name}: {stats['requests']} requests, {len(unexplained)} unexplained "
                f"({time.monotonic() - started:.0f}s)",
                file=sys.stderr,
                flush=True,
            )
        if verdict.agrees:
            return
        path = write_case(corpus, verdict, request.review, request.objects)
        stats["disagreements"] += 1
        for deviation_id in verdict.explained.values():
            seen[deviation_id] += 1
        if verdict.unexplained:
            unexplained.append(path.name)

    try:
        one()
    finally:
        differential.close()
    listed = [d.id for d in deviations if name in d.profiles]
    return {
        "profile": name,
        "release": RELEASE_OF_PROFILE[name],
        **stats,
        "seconds": round(time.monotonic() - started),
        "explained": dict(sorted(seen.items())),
        "unexplained": unexplained,
        "listed_not_seen": [d for d in listed if d not in seen],
        "checks_reached": {k: v for k, v in reached.items() if v},
        "checks_not_reached": sorted(c.id for c in checks if c.observable and not reached[c.id]),
        "checks_not_observable": sorted(c.id for c in checks if not c.observable),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000, help="generated requests per profile")
    parser.add_argument("--corpus", type=Path, default=Path("oracle-corpus"), help="folder of disagreements")
    parser.add_argument("--profiles", nargs="+", default=list(RELEASE_OF_PROFILE), choices=list(RELEASE_OF_PROFILE))
    parser.add_argument("--seed", type=int, default=39)
    parser.add_argument(
        "--witnesses", type=Path, help="also write each reached check's smallest request here (tests/oracle/witnesses)"
    )
    args = parser.parse_args(argv)
    reports = []
    for name in args.profiles:
        report = run_profile(name, args.requests, args.corpus / name, args.seed)
        reports.append(report)
        if args.witnesses:
            save_witnesses(report, args.corpus / name, args.witnesses)
        print(json.dumps(report, indent=1), flush=True)
    (args.corpus).mkdir(parents=True, exist_ok=True)
    (args.corpus / "report.json").write_text(json.dumps(reports, indent=1) + "\n")
    return 1 if any(r["unexplained"] for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
