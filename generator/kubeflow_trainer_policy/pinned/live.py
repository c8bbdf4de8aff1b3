"""`python -m kubeflow_trainer_policy.pinned.live [--all]`: install (once, cached like every pinned tool) what the
live tests run: the pinned kube-apiserver (tools/kube-apiserver) and the oldest supported Gatekeeper's manager, or,
with --all (`make e2e`), every supported release's manager whose source the module proxy serves. Prints each
binary's path; one line per binary that cannot be installed, and exit 1."""

from __future__ import annotations

import argparse
import sys

from kubeflow_trainer_policy.pinned.install import InstallError, install, log
from kubeflow_trainer_policy.pinned.versions import Tool, VersionsError, pins


def wanted(every_release: bool) -> list[Tool]:
    table = pins()
    managers = table.managers()
    tools = managers if every_release else managers[:1]
    return [tool for tool in (table.kube_apiserver, *tools) if tool is not None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kubeflow_trainer_policy.pinned.live")
    parser.add_argument("--all", action="store_true", help="every supported Gatekeeper's manager, not the oldest")
    args = parser.parse_args(argv)
    try:
        tools = wanted(args.all)
    except VersionsError as exc:
        print(f"live tools: {exc}", file=sys.stderr)
        return 1
    failures = []
    for tool in tools:
        try:
            print(f"{tool.label}: {install(tool)}")
        except InstallError as exc:
            failures.append(str(exc))
    for release in pins().gatekeeper:
        if release.manager_tool is None:
            log(f"gatekeeper {release.version} not installed: {release.gator_unavailable}")
    for failure in failures:
        print(f"live tools: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
