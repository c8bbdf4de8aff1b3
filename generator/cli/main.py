"""`trainer-policy`: one module per subcommand, each with `register(subparsers)` and `run(args)`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from generator.cli import (
    bundle_command,
    certs_command,
    generate_command,
    podsets_command,
    provider_command,
    review_command,
    test_command,
)
from generator.errors import EngineError, InputError

# podsets_command imports its engine only when it runs (its module holds the argument definitions alone).
COMMANDS = [
    generate_command,
    review_command,
    test_command,
    bundle_command,
    provider_command,
    certs_command,
    podsets_command,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trainer-policy",
        description="Kubeflow Trainer admission policies for OPA Gatekeeper: generate, test, review, bundle.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except (InputError, EngineError) as exc:
        print(f"trainer-policy {args.command}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
