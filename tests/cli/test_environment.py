"""TRAINER_POLICY_* variables (issue 40, item 5): the documented names are the ones read, a name nothing reads is
warned about (a misspelt limit was silently ignored), and the registry of known names holds every name the code
reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kubeflow_trainer_policy.bundle.archive import ArchiveLimits
from kubeflow_trainer_policy_provider import reader
from tests.cli.helpers import ACTIVE_INVENTORY, ACTIVE_REVIEW, run_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("TRAINER_POLICY_BUNDLE_MAX_ENTRIES", "max_entries"),
        ("TRAINER_POLICY_BUNDLE_MAX_ENTRY_BYTES", "max_entry_bytes"),
        ("TRAINER_POLICY_BUNDLE_MAX_TOTAL_BYTES", "max_total_bytes"),
    ],
)
def test_the_documented_bundle_limit_names_are_read(name: str, field: str) -> None:
    """TRAINER_POLICY_BUNDLE_MAX_ENTRIES was ignored: the code read TRAINER_POLICY_BUNDLE_ENTRIES."""
    assert getattr(ArchiveLimits.from_env({name: "7"}), field) == 7
    assert name in ArchiveLimits().describe(field)
    assert name in reader.KNOWN_VARIABLES


def test_an_unknown_variable_is_warned_about_naming_the_closest_known_one(monkeypatch) -> None:
    monkeypatch.setenv("TRAINER_POLICY_BUNDLE_ENTRIES", "3")
    monkeypatch.setenv("TRAINER_POLICY_MAX_DEPHT", "3")
    monkeypatch.setenv("TRAINER_POLICY_SOMETHING", "x")
    monkeypatch.setenv("OTHER_TRAINER_POLICY_X", "x")  # not ours: not a TRAINER_POLICY_* name
    result = run_cli("review", ACTIVE_REVIEW, "--objects", ACTIVE_INVENTORY)
    assert result.code == 1, result
    warnings = [line for line in result.stderr_lines if "is not a variable" in line]
    assert warnings == [
        "trainer-policy review: warning: 'TRAINER_POLICY_BUNDLE_ENTRIES' is not a variable this program reads; "
        "ignored (did you mean TRAINER_POLICY_BUNDLE_MAX_ENTRIES?)",
        "trainer-policy review: warning: 'TRAINER_POLICY_MAX_DEPHT' is not a variable this program reads; "
        "ignored (did you mean TRAINER_POLICY_MAX_DEPTH?)",
        "trainer-policy review: warning: 'TRAINER_POLICY_SOMETHING' is not a variable this program reads; ignored",
    ]


def test_known_variables_warn_about_nothing(monkeypatch) -> None:
    for name in reader.KNOWN_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRAINER_POLICY_BUNDLE_MAX_ENTRIES", "5")
    monkeypatch.setenv("TRAINER_POLICY_MAX_DEPTH", "100")
    assert reader.unknown_variables() == []


def test_every_variable_the_code_reads_is_known() -> None:
    """Each TRAINER_POLICY_* name written in the shipped code (and the reader's limits) is in the registry, so
    no variable that works is ever called unknown."""
    written: set[str] = set()
    for folder in ("generator", "provider"):
        for path in (ROOT / folder).rglob("*.py"):
            # Whole names only: not prefixes such as TRAINER_POLICY_BUNDLE_ or TRAINER_POLICY_MAX_<NAME>.
            written |= set(re.findall(r"TRAINER_POLICY_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_<*{])", path.read_text()))
    # TRAINER_POLICY_BLOCK_<n> is a placeholder in rendered YAML text, not a variable.
    written = {name for name in written if not name.startswith("TRAINER_POLICY_BLOCK_")}
    assert written <= reader.KNOWN_VARIABLES, written - reader.KNOWN_VARIABLES
