"""`python -m benchmarks`: run every benchmark module that is present."""

from __future__ import annotations

import importlib
import sys

MODULES = [
    "benchmarks.trivial_baseline",
    "benchmarks.policy_review",
    "benchmarks.budget_review",
    "benchmarks.trainjob_review",
    "benchmarks.worst_case_review",
    "benchmarks.provider_load",
    "benchmarks.provider_instructions",
    "benchmarks.tls_handshake",
    "benchmarks.granian_guarantees",
    "benchmarks.cli_startup",
    "benchmarks.review_folder",
    "benchmarks.yaml_reader",
]


def main() -> int:
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        print(f"== {name}", flush=True)
        module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
