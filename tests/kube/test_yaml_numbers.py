"""Scalars as Kubernetes reads them: every spelling of an int, a float, a bool and a null (and of text that only
looks like one) is read by the manifest reader (provider/reader.py, what `review` sees) exactly as kubectl reads
it and the real API server stores it (`kubectl create --dry-run=server -o json`, and `--dry-run=client` for
kubectl's own reading), as values and as mapping keys; and `review` decides on what the API server stores
(issue 40, item 4: `numNodes: 1e3` was a string to review and 1000 to the API server)."""

from __future__ import annotations

import json
import os
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy_provider import reader
from tests.cli.helpers import run_cli
from tests.kube.cluster import KubeCluster
from tests.kube.kubectl import kubectl

pytestmark = pytest.mark.kube

INTS = [
    "0", "-0", "+0", "1", "+1", "-1", "007", "012", "-012", "08", "09", "0o10", "0O10", "-0o10", "0x1F", "0X1f",
    "+0x10", "-0x10", "0b1", "0B11", "-0b101", "0b-1", "1_000", "1__0", "_1", "1_", "0x_1F", "9223372036854775807",
    "-9223372036854775808", "9223372036854775808", "18446744073709551615", "18446744073709551616",
    "-9223372036854775809", "123456789012345678901234567890", "0x10000000000000000", "0b" + "1" * 65, "1:20",
    "-1:20", "190:20:30", "1,000", "1 000",
]  # fmt: skip
FLOATS = [
    "1e3", "1E3", "1.0e3", "+1e3", "-1e3", "1e+3", "1e-3", "1.5", "-1.5", "+1.5", "1.", "-1.", ".5", "-.5", "+.5",
    "0.1", "1.0", "1.50", "1.5e1", "1_0.5", "1e1_0", "3.0e-5", "1e6", "1e7", "1e15", "1e16", "1e18", "1e19",
    "1e20", "1e21", "1e22", "1.7976931348623157e308", "5e-324", "1e-400", "0.0", "-0.0", ".e3", "1e", "1.2.3",
    "1e3.5", "0x1p-2", "._5", ". 5", "Infinity", "inf", "+inf", "nan", "NaN", "1_e3", "12e03", "1e308", "1e309",
    "-1e400", "1e400", ".5e400", "1" + "0" * 308, "1" + "0" * 309,
]  # fmt: skip
BOOLS_NULLS = [
    "true", "True", "TRUE", "false", "False", "FALSE", "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON",
    "off", "Off", "OFF", "y", "Y", "n", "N", "tRue", "yES", "oN", "t", "f", "~", "null", "Null", "NULL", "nULL",
    "none", "None", "=", "<<x", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10",
    "2001-12-14T21:59:43Z", "2002-1-2", "12:30:00",
]  # fmt: skip
QUOTED_AND_TAGGED = [
    '"1e3"', "'1e3'", '"yes"', "'null'", '"0o10"', "!!str 1e3", "!!str yes", "!!float 1", "!!float 1e3",
    '!!int "7"', "!!int 0o10", "!!bool yes", "!!null ~", "!!float 0x10", "|-\n      1e3",
]  # fmt: skip
VALUES = INTS + FLOATS + BOOLS_NULLS + QUOTED_AND_TAGGED
KEYS = [
    "1e3", "0o10", "012", "+1", "1.5", "0.1", "1e7", "1e-7", "3.0e-5", "123456789", "yes", "N", "1:20",
    "2001-12-14", '"1e3"', "!!float 2", "18446744073709551616", "9223372036854775807", "0x1F", "1e21", "1.25e-3",
]  # fmt: skip
"""Spellings of distinct keys: two spellings of one key (`on` and `yes`, `1e3` and `1_000`) are a duplicate key,
which the reader refuses (kubectl keeps one of them)."""
REFUSED_BY_BOTH = [".inf", "-.inf", "+.Inf", ".nan", ".NaN", "!!int 1e3", "!!int yes", "!!bool 1", "!!null 0"]
"""NaN and infinities (encoding/json cannot write them) and explicit tags on text of another kind."""

ISSUE_SPELLINGS = ["1e3", "1E3", "1.0e3", "+1e3", "0o10"]


def _env(tmp_path: Path, cluster: KubeCluster) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "KUBECONFIG": str(cluster.kubeconfig),
        "KUBECACHEDIR": str(tmp_path / "kube-cache"),
        "HOME": str(tmp_path),
    }


def _trainjob(name: str, spec_lines: list[str]) -> str:
    return "\n".join(
        [
            "apiVersion: trainer.kubeflow.org/v1alpha1",
            "kind: TrainJob",
            "metadata:",
            f"  name: {name}",
            "  namespace: default",
            "spec:",
            *spec_lines,
            "",
        ]
    )


def _values_manifest(spellings: list[str]) -> str:
    return _trainjob("spellings", ["  values:", *(f"    v{i:03d}: {s}" for i, s in enumerate(spellings))])


def _keys_manifest(spellings: list[str]) -> str:
    return _trainjob("keys", ["  keys:", *(f"    {s}: {i}" for i, s in enumerate(spellings))])


def _create(tmp_path: Path, cluster: KubeCluster, text: str, dry_run: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / f"manifest-{dry_run}.yaml"
    path.write_text(text)
    return subprocess.run(
        [kubectl(), "create", f"--dry-run={dry_run}", "-o", "json", "-f", str(path)],
        capture_output=True,
        text=True,
        env=_env(tmp_path, cluster),
        timeout=60,
        check=False,
    )


def _typed(value: Any) -> Any:
    """The value with the JSON type of every scalar made explicit (True is not 1, "1" is not 1), numbers by their
    exact decimal value: kubectl prints a float64 the API server holds in Go's shortest form without exponent
    (18446744073709552000), which json reads back as an int, and OPA compares numbers by decimal value."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ("number", Decimal(repr(value)) if isinstance(value, float) else Decimal(value))
    return (type(value).__name__, value)


def _stored(tmp_path: Path, cluster: KubeCluster, text: str, dry_run: str) -> dict[str, Any]:
    proc = _create(tmp_path, cluster, text, dry_run)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["spec"]


def _read(text: str) -> dict[str, Any]:
    (document,) = reader.parse(text, "spellings.yaml", reader.ReadLimits())
    return document.body["spec"]


@pytest.mark.parametrize("dry_run", ["server", "client"])
def test_every_spelling_of_a_value_is_read_as_the_api_server_stores_it(kube_cluster, tmp_path, dry_run):
    stored = _stored(tmp_path, kube_cluster, _values_manifest(VALUES), dry_run)["values"]
    seen = _read(_values_manifest(VALUES))["values"]
    differ = {
        VALUES[int(key[1:])]: {"kubernetes": _typed(stored.get(key)), "review": _typed(seen.get(key))}
        for key in sorted(set(stored) | set(seen))
        if _typed(stored.get(key)) != _typed(seen.get(key))
    }
    assert differ == {}
    assert len(seen) == len(VALUES)


@pytest.mark.parametrize("dry_run", ["server", "client"])
def test_every_spelling_of_a_key_is_read_as_the_api_server_stores_it(kube_cluster, tmp_path, dry_run):
    stored = _stored(tmp_path, kube_cluster, _keys_manifest(KEYS), dry_run)["keys"]
    seen = _read(_keys_manifest(KEYS))["keys"]
    assert _typed(seen) == _typed(stored)
    assert len(seen) == len(KEYS)


MERGES = [
    "  base: &x {k: 2, j: 5}",
    "  other: &y {k: 3, m: 4}",
    "  before: {k: 1, <<: *x}",
    "  after: {<<: *x, k: 1}",
    "  both: {<<: [*x, *y]}",
    "  twice: {<<: *x, <<: *y}",
    "  block:",
    "    k: 0",
    "    <<: *y",
    "    m: 9",
]
"""go-yaml v2 merges `<<` where it is written (over the keys before it); PyYAML let the mapping's own keys win."""


@pytest.mark.parametrize("dry_run", ["server", "client"])
def test_merge_keys_are_read_as_the_api_server_stores_them(kube_cluster, tmp_path, dry_run):
    text = _trainjob("merges", MERGES)
    assert _typed(_read(text)) == _typed(_stored(tmp_path, kube_cluster, text, dry_run))


@pytest.mark.parametrize("spelling", REFUSED_BY_BOTH)
def test_what_kubectl_refuses_the_reader_refuses(kube_cluster, tmp_path, spelling):
    proc = _create(tmp_path, kube_cluster, _values_manifest([spelling]), "client")
    assert proc.returncode != 0 and proc.stderr.strip()
    with pytest.raises(InputError, match=r"spellings\.yaml"):
        _read(_values_manifest([spelling]))


BUDGET = Path(__file__).resolve().parents[2] / "bundles/gatekeeper/v2.0/trainjob-resource-budget"


@pytest.mark.parametrize("spelling", ISSUE_SPELLINGS)
def test_review_denies_the_numbers_the_api_server_stores(kube_cluster, tmp_path, spelling):
    """With maxTrainerNodes 4, `numNodes: 1e3` (or 0o10) is 1000 (8) to the API server, so review denies it."""
    text = _trainjob(
        f"budget-{ISSUE_SPELLINGS.index(spelling)}",
        ["  runtimeRef:", "    name: torch-distributed", "  trainer:", f"    numNodes: {spelling}"],
    )
    stored = _stored(tmp_path, kube_cluster, text, "server")["trainer"]["numNodes"]
    assert type(stored) is int and stored > 4
    assert _read(text)["trainer"]["numNodes"] == stored
    job = tmp_path / "job.yaml"
    job.write_text(text)
    parameters = tmp_path / "parameters.yaml"
    parameters.write_text("trainjob-resource-budget:\n  maxTotal: {}\n  maxTrainerNodes: 4\n")
    result = run_cli(
        "review",
        job,
        "--profile",
        "v2.0",
        "--objects",
        BUDGET / "samples/cluster-1.yaml",
        "--parameters",
        parameters,
        "--output",
        "json",
    )
    assert result.code == 1, result.stdout + result.stderr
    assert "maxTrainerNodes" in result.stdout or "trainer nodes" in result.stdout, result.stdout
