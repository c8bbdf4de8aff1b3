"""Issue 40, item 5: `install-engine` exited 0 with an empty pinned requirements file (pip installs nothing from
it and still says 0). Now the file must hold pinned, hashed requirements, else one line naming it and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeflow_trainer_policy.cli import install_engine_command
from kubeflow_trainer_policy.paths import ENGINE_REQUIREMENTS
from tests.cli.helpers import assert_error, run_cli

HASH = "--hash=sha256:" + "0" * 64


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "has no requirement (empty or only comments)"),
        ("# pinned by hand\n\n   \n", "has no requirement (empty or only comments)"),
        ("opa-golib-python-bindings==0.4.4\n", "requirement 1 is not pinned and hashed"),
        (f"opa-golib-python-bindings {HASH}\n", "requirement 1 is not pinned and hashed"),
        (f"opa-golib-python-bindings==0.4.4 \\\n    {HASH}\nother>=1\n", "requirement 2 is not pinned and hashed"),
    ],
    ids=["empty", "only-comments", "no-hash", "no-version", "second-unpinned"],
)
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_an_empty_or_unpinned_requirements_file_fails_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, fragment: str, dry_run: bool
) -> None:
    pinned = tmp_path / "opa-engine.txt"
    pinned.write_text(text)
    monkeypatch.setattr(install_engine_command, "ENGINE_REQUIREMENTS", pinned)
    result = run_cli("install-engine", *(["--dry-run"] if dry_run else []))
    assert_error(result, str(pinned), fragment)
    assert result.stdout == ""


def test_the_shipped_requirements_file_is_pinned_and_hashed() -> None:
    requirements = install_engine_command.pinned_requirements(ENGINE_REQUIREMENTS)
    assert [r.split("==")[0] for r in requirements] == ["opa-golib-python-bindings"]
    result = run_cli("install-engine", "--dry-run")
    assert result.code == 0 and str(ENGINE_REQUIREMENTS) in result.stdout, result
