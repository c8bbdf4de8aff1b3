"""`trainer-policy provider serve`: the provider's own command line (provider.cli) under `trainer-policy`."""

from __future__ import annotations

import argparse

from kubeflow_trainer_policy_provider.cli import SERVE_DESCRIPTION, SERVE_HELP, add_serve_arguments, run


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "provider",
        help="run the external data provider (JobSet state for Gatekeeper)",
        description="Gatekeeper external data provider answering <namespace>/<name> keys with JobSet state. "
        "The same as the standalone `trainer-policy-provider` command.",
    )
    commands = parser.add_subparsers(dest="provider_command", required=True, metavar="SUBCOMMAND")
    serve = commands.add_parser("serve", help=SERVE_HELP, description=SERVE_DESCRIPTION)
    add_serve_arguments(serve)
    serve.set_defaults(run=run)
