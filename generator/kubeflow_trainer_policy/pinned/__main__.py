"""`python -m kubeflow_trainer_policy.pinned` (`make tools`): install every pinned tool that is not in the cache yet,
printing each one's path; one line per tool that cannot be installed, and exit 1."""

from __future__ import annotations

import sys

from kubeflow_trainer_policy.pinned.install import InstallError, install, log
from kubeflow_trainer_policy.pinned.versions import VersionsError, pins


def main() -> int:
    try:
        table = pins()
    except VersionsError as exc:
        print(f"make tools: {exc}", file=sys.stderr)
        return 1
    failures = []
    for tool in table.all_tools():
        try:
            print(f"{tool.label}: {install(tool)}")
        except InstallError as exc:
            failures.append(str(exc))
    for release in table.gatekeeper:
        if release.gator_unavailable:
            log(f"gator {release.version} (Gatekeeper {release.release}) not installed: {release.gator_unavailable}")
    for failure in failures:
        print(f"make tools: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
