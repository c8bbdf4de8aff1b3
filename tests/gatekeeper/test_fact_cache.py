"""Module facts on disk: a second process's parser answers from the cache without starting an engine, and a
cache that is corrupt, unwritable or turned off never changes a fact or an error."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubeflow_trainer_policy.engine import fact_cache
from kubeflow_trainer_policy.engine.fact_cache import ENV_VAR, FactCache, cache_dir
from kubeflow_trainer_policy.engine.rego_ast import RegoParser
from kubeflow_trainer_policy.errors import EngineError, TemplateError
from kubeflow_trainer_policy.gatekeeper.policy_set import load_policy_set
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from tests.gatekeeper.helpers import FIXTURES, request, trainjob
from tests.hostile import TRAINER_POLICY, run_measured

MODULE = """package lib.demo

import data.inventory.cluster

f(x) := object.get(x, "a", 1)

violation contains {"msg": "m"} if external_data({"provider": "p", "keys": []})
"""


def _cached_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix == ".json")


def test_a_second_parser_reads_the_facts_from_disk_without_an_engine(tmp_path):
    uncached = RegoParser(FactCache(None)).parse("a.rego", MODULE)
    first = RegoParser(FactCache(tmp_path))
    assert first.parse("a.rego", MODULE) == uncached
    assert len(_cached_files(tmp_path)) == 1
    second = RegoParser(FactCache(tmp_path))
    assert second.parse("b.rego", MODULE) == uncached
    assert second._engine is None  # answered from the file: no OPA engine was started
    assert uncached.package == "lib.demo" and "external_data" in uncached.calls
    assert "data.inventory.cluster" in uncached.data_refs and {"f", "violation"} <= uncached.rule_names


def test_another_source_is_another_entry(tmp_path):
    parser = RegoParser(FactCache(tmp_path))
    parser.parse("a.rego", MODULE)
    other = parser.parse("a.rego", MODULE.replace("lib.demo", "lib.other"))
    assert other.package == "lib.other"
    assert len(_cached_files(tmp_path)) == 2


@pytest.mark.parametrize("content", ["", "{", "[]", '{"package": 1}', '{"package": "p", "rule_names": "x"}'])
def test_a_corrupt_entry_is_parsed_again_and_rewritten(tmp_path, content):
    RegoParser(FactCache(tmp_path)).parse("a.rego", MODULE)
    (entry,) = _cached_files(tmp_path)
    entry.write_text(content)
    parser = RegoParser(FactCache(tmp_path))
    assert parser.parse("a.rego", MODULE).package == "lib.demo"
    assert parser._engine is not None
    assert RegoParser(FactCache(tmp_path)).parse("a.rego", MODULE).package == "lib.demo"
    assert '"package": "lib.demo"' in entry.read_text()


def test_a_module_that_does_not_parse_is_never_stored_and_names_its_file_each_time(tmp_path):
    for file in ("first.rego", "second.rego"):
        with pytest.raises(EngineError, match=file):
            RegoParser(FactCache(tmp_path)).parse(file, "package p\n\nx if {")
    assert not tmp_path.exists() or _cached_files(tmp_path) == []


def test_an_unwritable_cache_folder_is_skipped(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    assert RegoParser(FactCache(blocker / "facts")).parse("a.rego", MODULE).package == "lib.demo"


def test_the_folder_comes_from_the_environment_and_empty_turns_it_off(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.setenv(ENV_VAR, "")
    assert cache_dir() is None
    RegoParser().parse("a.rego", MODULE)
    assert not (tmp_path / "c").exists()
    monkeypatch.delenv(ENV_VAR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "kubeflow-trainer-policy" / "facts"


# --- templates known to compile alone get their own engine only when a review needs it ------------------------


RUNNER_FILES = [FIXTURES / "templates.yaml", FIXTURES / "constraints.yaml"]


def test_a_second_runner_compiles_templates_alone_only_when_needed(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "facts"))
    policy_set = load_policy_set(RUNNER_FILES)
    with GatekeeperRunner(policy_set) as first:
        assert set(first.compiled) == set(policy_set.templates)  # each compiled alone, as Gatekeeper does
        expected = first.review(request("CREATE", trainjob(labels={})))
    with GatekeeperRunner(load_policy_set(RUNNER_FILES)) as second:
        assert second.compiled == {}
        result = second.review(request("CREATE", trainjob(labels={})))
        assert second.compiled == {}  # the shared engine answered
        assert result == expected and result.violations
        second.combined = None  # as when templates cannot share an engine: each is evaluated alone
        assert second.review(request("CREATE", trainjob(labels={}))) == expected
        assert {v.constraint_kind for v in expected.violations} <= set(second.compiled) <= set(policy_set.templates)


def test_the_compile_check_is_per_builtin_set(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "facts"))
    policy_set = load_policy_set(RUNNER_FILES)
    with GatekeeperRunner(policy_set, external_data=True):
        pass
    # Compiled with external_data registered is not compiled as gator loads templates (without it).
    with pytest.raises(
        TemplateError, match=r"k8sexternalecho: Rego does not compile: .*undefined function external_data"
    ):
        GatekeeperRunner(policy_set, external_data=False)


# --- issue 40, item 3: the cache is an optimisation that cannot decide ------------------------------------------

CONSTRAINTS = [str(FIXTURES / "templates.yaml"), str(FIXTURES / "constraints.yaml")]


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        ENV_VAR: str(tmp_path / "facts"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }


def _cli(tmp_path: Path, *args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kubeflow_trainer_policy.cli.main", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=_env(tmp_path), check=False)


def _denied_review(tmp_path: Path) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(trainjob(labels={})))
    return path


def _entries(tmp_path: Path) -> list[Path]:
    return _cached_files(tmp_path / "facts")


def _poison(entry: Path, edit) -> None:
    """Edits an entry's facts as someone who can write the folder would: the JSON stays well-formed, the facts
    (in the entry's body, or the whole entry as main wrote it) change, and anything that needs no secret (the
    source hash; an HMAC under a key of the attacker's own) is made to match."""
    document = json.loads(entry.read_text())
    body = document.get("body", document)
    if not edit(body):
        return
    if "hmac" in document:
        signed = json.dumps(["2", "", document["source_sha256"], body], sort_keys=True).encode()
        document["hmac"] = hmac.new(b"attacker's own key".ljust(32, b"."), signed, hashlib.sha256).hexdigest()
    entry.write_text(json.dumps(document))


def _elsewhere(body: dict) -> bool:
    """Points a template's entry module at a package with no rules: its `violation` query finds nothing."""
    if isinstance(body.get("package"), str) and not body["package"].startswith("lib"):
        body["package"] = "poisoned.elsewhere"
        return True
    return False


def test_an_edited_entry_cannot_turn_a_denial_into_an_allow(tmp_path):
    job = _denied_review(tmp_path)
    first = _cli(tmp_path, "review", job, "--constraints", *CONSTRAINTS)
    assert first.returncode == 1 and "label team is required" in first.stdout, first
    for entry in _entries(tmp_path):
        _poison(entry, _elsewhere)
    again = _cli(tmp_path, "review", job, "--constraints", *CONSTRAINTS)
    assert again.returncode == 1 and "label team is required" in again.stdout, again
    assert "fact cache:" in again.stderr and "ignored and rebuilt" in again.stderr, again.stderr
    # Rebuilt: the next run verifies its entries and says nothing.
    third = _cli(tmp_path, "review", job, "--constraints", *CONSTRAINTS)
    assert third.returncode == 1 and "fact cache" not in third.stderr, third


def test_an_edited_entry_cannot_hide_a_failing_test(tmp_path):
    folder = FIXTURES / "rego-fail"
    first = _cli(tmp_path, "test", folder)
    assert first.returncode == 1 and first.stdout.splitlines()[-1] == "1 passed, 2 failed", first

    def no_tests(body: dict) -> bool:
        names = body.get("rule_names")
        if isinstance(names, list) and any(n.startswith("test_") for n in names):
            body["rule_names"] = [n for n in names if not n.startswith("test_")]
            return True
        return False

    for entry in _entries(tmp_path):
        _poison(entry, no_tests)
    again = _cli(tmp_path, "test", folder)
    assert again.returncode == 1 and again.stdout.splitlines()[-1] == "1 passed, 2 failed", again
    assert "ignored and rebuilt" in again.stderr


def test_an_entry_copied_over_another_does_not_verify(tmp_path, capsys):
    other = MODULE.replace("lib.demo", "lib.other")
    cache = FactCache(tmp_path)
    parser = RegoParser(cache)
    parser.parse("a.rego", MODULE)
    parser.parse("b.rego", other)
    entries = _cached_files(tmp_path)
    by_package = {json.loads(e.read_text())["body"]["package"]: e for e in entries}
    by_package["lib.demo"].write_bytes(by_package["lib.other"].read_bytes())
    assert RegoParser(FactCache(tmp_path)).parse("a.rego", MODULE).package == "lib.demo"
    assert "written for another source" in capsys.readouterr().err


def test_a_fifo_entry_is_not_waited_on(tmp_path):
    """A FIFO in place of an entry hung `review` on main (open() for reading waits for a writer)."""
    job = _denied_review(tmp_path)
    assert _cli(tmp_path, "review", job, "--constraints", *CONSTRAINTS).returncode == 1
    for entry in _entries(tmp_path):
        entry.unlink()
        os.mkfifo(entry)
    result = _cli(tmp_path, "review", job, "--constraints", *CONSTRAINTS, timeout=60)
    assert result.returncode == 1 and "label team is required" in result.stdout, result
    assert "not a regular file" in result.stderr, result.stderr
    assert all(e.is_file() for e in _entries(tmp_path))  # replaced by verified entries


def test_a_symlink_to_dev_zero_is_not_read(tmp_path):
    """A symlink to /dev/zero made main read 3.8 GB: symlinks are not followed, and nothing is read past
    MAX_ENTRY_BYTES."""
    job = _denied_review(tmp_path)
    assert _cli(tmp_path, "review", job, "--constraints", *CONSTRAINTS).returncode == 1
    for entry in _entries(tmp_path):
        entry.unlink()
        entry.symlink_to("/dev/zero")
    result = run_measured(
        [*TRAINER_POLICY, "review", job, "--constraints", *CONSTRAINTS], env=_env(tmp_path), timeout=120
    )
    assert result.code == 1 and "label team is required" in result.stdout, result
    assert "a symlink; ignored and rebuilt" in result.stderr, result.stderr
    assert result.peak_rss_mib < 400, result.peak_rss_mib


@pytest.mark.parametrize("kind", ["oversized", "folder", "other user's file", "group-writable"])
def test_an_unexpected_entry_is_ignored_and_rebuilt(tmp_path, capsys, kind):
    RegoParser(FactCache(tmp_path)).parse("a.rego", MODULE)
    (entry,) = _cached_files(tmp_path)
    if kind == "oversized":
        entry.write_text(" " * (fact_cache.MAX_ENTRY_BYTES + 1) + entry.read_text())
    elif kind == "folder":
        entry.unlink()
        entry.mkdir()
    elif kind == "other user's file":
        if os.geteuid() != 0:
            pytest.skip("giving a file to another user needs root")
        os.chown(entry, 12345, 12345)
    else:
        entry.chmod(0o664)
    assert RegoParser(FactCache(tmp_path)).parse("a.rego", MODULE).package == "lib.demo"
    assert "ignored and rebuilt" in capsys.readouterr().err


def test_the_folder_is_made_private(tmp_path):
    folder = tmp_path / "new" / "facts"
    RegoParser(FactCache(folder)).parse("a.rego", MODULE)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert _cached_files(folder)


@pytest.mark.parametrize("problem", ["world-writable", "group-writable", "another user's"])
def test_a_folder_another_user_can_write_is_not_used(tmp_path, capsys, problem):
    folder = tmp_path / "facts"
    RegoParser(FactCache(folder)).parse("a.rego", MODULE)  # a good entry, which must not be read either
    if problem == "another user's":
        if os.geteuid() != 0:
            pytest.skip("giving a folder to another user needs root")
        os.chown(folder, 12345, 12345)
    else:
        folder.chmod(0o777 if problem == "world-writable" else 0o770)
    before = {p.name: p.read_bytes() for p in _cached_files(folder)}
    parser = RegoParser(FactCache(folder))
    assert parser.parse("a.rego", MODULE).package == "lib.demo"
    assert parser._engine is not None  # parsed, not read from the refused folder
    assert "not used" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in _cached_files(folder)} == before  # nothing written there either


def test_a_restored_cache_from_elsewhere_does_not_verify(tmp_path, monkeypatch, capsys):
    """The HMAC key lives outside the cache folder: a cache folder copied from another machine (or restored from
    a shared CI cache) brings entries that were not made with this machine's key."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "elsewhere"))
    fact_cache._keys.clear()
    RegoParser(FactCache(tmp_path / "facts")).parse("a.rego", MODULE)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "here"))
    fact_cache._keys.clear()
    parser = RegoParser(FactCache(tmp_path / "facts"))
    assert parser.parse("a.rego", MODULE).package == "lib.demo"
    assert parser._engine is not None
    assert "does not verify" in capsys.readouterr().err
    assert stat.S_IMODE((tmp_path / "here" / "kubeflow-trainer-policy" / "fact-cache.key").stat().st_mode) == 0o600
