"""Module facts on disk: a second process's parser answers from the cache without starting an engine, and a
cache that is corrupt, unwritable or turned off never changes a fact or an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeflow_trainer_policy.engine.fact_cache import ENV_VAR, FactCache, cache_dir
from kubeflow_trainer_policy.engine.rego_ast import RegoParser
from kubeflow_trainer_policy.errors import EngineError, TemplateError
from kubeflow_trainer_policy.gatekeeper.policy_set import load_policy_set
from kubeflow_trainer_policy.gatekeeper.runner import GatekeeperRunner
from tests.gatekeeper.helpers import FIXTURES, request, trainjob

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
