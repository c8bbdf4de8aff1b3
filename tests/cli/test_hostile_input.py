"""Issue 29, item 1: one reading path with limits for every YAML/JSON input, refusing hostile input with one line
that names the file (and the limit or field), exit 2, in bounded memory. Every case runs the real command as its
own process, with its peak RSS read from the kernel."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.cli.helpers import ACTIVE_INVENTORY, ACTIVE_REVIEW, serving_pki
from tests.hostile import (
    PROVIDER,
    TRAINER_POLICY,
    alias_bomb,
    assert_refused,
    close_fd,
    run_measured,
)
from tests.support import free_port

ALIAS_LIMIT = "YAML aliases expand to more than the limit of 100000 nodes (--max-alias-nodes"


@pytest.fixture
def bomb(tmp_path: Path) -> Path:
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    assert len(path.read_bytes()) < 600  # the 433-byte bomb, give or take the object around it
    return path


def test_review_refuses_an_alias_bomb_file(bomb: Path) -> None:
    assert_refused(run_measured([*TRAINER_POLICY, "review", bomb]), f"{bomb}: {ALIAS_LIMIT}")


def test_review_refuses_an_alias_bomb_on_stdin(bomb: Path) -> None:
    with bomb.open("rb") as stdin:
        assert_refused(run_measured([*TRAINER_POLICY, "review", "-"], stdin=stdin), f"<stdin>: {ALIAS_LIMIT}")


def test_review_refuses_an_alias_bomb_in_objects(bomb: Path) -> None:
    result = run_measured([*TRAINER_POLICY, "review", ACTIVE_REVIEW, "--objects", ACTIVE_INVENTORY, bomb])
    assert_refused(result, f"{bomb}: {ALIAS_LIMIT}")


def test_review_refuses_an_alias_bomb_in_parameters(tmp_path: Path) -> None:
    parameters = tmp_path / "parameters.yaml"
    parameters.write_text(alias_bomb().replace("kind: TrainJob", "kind: Parameters"))
    result = run_measured([*TRAINER_POLICY, "review", ACTIVE_REVIEW, "--parameters", parameters])
    assert_refused(result, f"{parameters}: {ALIAS_LIMIT}")


def test_a_suite_with_an_alias_bomb_inventory_is_refused(tmp_path: Path, bomb: Path) -> None:
    rule = Path("bundles/gatekeeper/v2.0/trainjob-managed-by").resolve()
    suite = {
        "apiVersion": "test.gatekeeper.sh/v1alpha1",
        "kind": "Suite",
        "tests": [
            {
                "name": "t",
                "template": str(rule / "template.yaml"),
                "constraint": str(rule / "constraint" / "constraint.yaml"),
                "cases": [{"name": "c", "object": str(bomb), "inventory": [str(bomb)], "assertions": [{}]}],
            }
        ],
    }
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    assert_refused(run_measured([*TRAINER_POLICY, "test", tmp_path]), f"{bomb}: {ALIAS_LIMIT}")


def provider_serve(tmp_path: Path, *objects: Path) -> list[str | Path]:
    pki = serving_pki(tmp_path / "pki")
    port = free_port()
    tls = ["--tls-cert", pki["cert"], "--tls-key", pki["key"]]
    return [*PROVIDER, "serve", "--listen", f"127.0.0.1:{port}", *tls, "--objects", *objects]


def test_provider_serve_refuses_an_alias_bomb_before_listening(tmp_path: Path, bomb: Path) -> None:
    assert_refused(run_measured(provider_serve(tmp_path, bomb)), f"{bomb}: {ALIAS_LIMIT}")


def test_review_of_dev_zero_stops_at_the_size_limit() -> None:
    result = run_measured([*TRAINER_POLICY, "review", "/dev/zero", "--max-input-bytes", "1000000"])
    assert_refused(result, "/dev/zero: larger than the limit of 1000000 bytes (--max-input-bytes")
    with open("/dev/zero", "rb") as zero:
        result = run_measured([*TRAINER_POLICY, "review", "-"], stdin=zero)  # the default limit, 128 MiB
    assert_refused(result, "<stdin>: larger than the limit of 134217728 bytes", max_rss_mib=400)


@pytest.mark.parametrize("suffix", ["yaml", "json"])
def test_a_5000_digit_integer_names_the_field(tmp_path: Path, suffix: str) -> None:
    body = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "a"}}
    text = json.dumps({**body, "spec": {"trainer": {"numNodes": 0}}}).replace("0}}}", "9" * 5000 + "}}}")
    path = tmp_path / f"big.{suffix}"
    path.write_text(text if suffix == "json" else yaml.safe_dump(json.loads(text.replace("9" * 5000, '"N"'))))
    if suffix == "yaml":
        path.write_text(path.read_text().replace("numNodes: N", "numNodes: " + "9" * 5000))
    result = run_measured([*TRAINER_POLICY, "review", path])
    assert_refused(result, f"{path}: spec.trainer.numNodes: number 99999999999999999999... (5000 chars) out of range")


def test_binary_on_stdin_is_not_utf8_text() -> None:
    proc = subprocess.run(
        [*TRAINER_POLICY, "review", "-"], input=b"\x8f\xff\x00binary", capture_output=True, timeout=60
    )
    assert proc.returncode == 2, proc
    assert proc.stderr.decode().splitlines() == [
        "trainer-policy review: <stdin>: not UTF-8 text (byte 0x8f at offset 0)"
    ]


def test_closed_stdin_is_named() -> None:
    result = run_measured([*TRAINER_POLICY, "review", "-"], stdin=None, preexec=close_fd(0))
    assert_refused(result, "trainer-policy review: <stdin>: standard input is closed")


def test_closed_stdout_is_named() -> None:
    result = run_measured([*TRAINER_POLICY, "review", ACTIVE_REVIEW], stdout=None, preexec=close_fd(1))
    assert_refused(result, "<stdout>: standard output is closed")


def test_a_full_stdout_is_named() -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [*TRAINER_POLICY, "review", ACTIVE_REVIEW, "--objects", ACTIVE_INVENTORY, "-o", "json"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 2, proc
    assert proc.stderr.splitlines() == [
        "trainer-policy review: <stdout>: No space left on device: the output was not written whole"
    ]


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        (
            "dup.yaml",
            "apiVersion: v1\nkind: TrainJob\nmetadata:\n  name: a\n  name: b\n",
            "duplicate key 'name' at line 5",
        ),
        ("dup.json", '{"apiVersion": "v1", "kind": "TrainJob", "kind": "JobSet"}', "duplicate key 'kind'"),
    ],
)
def test_duplicate_keys_are_an_input_error(tmp_path: Path, name: str, text: str, where: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert_refused(run_measured([*TRAINER_POLICY, "review", path]), f"{path}: {where}")


def test_merge_keys_may_be_overridden_without_being_duplicates(tmp_path: Path) -> None:
    path = tmp_path / "merge.yaml"
    path.write_text(
        "base: &base {name: a, namespace: team-a}\n"
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  <<: *base\n  name: b\n"
    )
    result = run_measured([*TRAINER_POLICY, "review", path, "-o", "json"])
    assert result.code == 0, result


@pytest.mark.parametrize(
    ("flag", "env", "value", "text", "message"),
    [
        # (the profile's own files are read through the same path: the limits here leave room for them)
        ("--max-input-bytes", "TRAINER_POLICY_MAX_INPUT_BYTES", "60000", "x" * 70000, "larger than the limit of 60000"),
        ("--max-documents", "TRAINER_POLICY_MAX_DOCUMENTS", "2", "a: 1\n---\nb: 1\n---\nc: 1\n", "more than the limit"),
        ("--max-depth", "TRAINER_POLICY_MAX_DEPTH", "3", "a: {b: {c: {d: 1}}}\n", "nested deeper than the limit of 3"),
        (
            "--max-alias-nodes",
            "TRAINER_POLICY_MAX_ALIAS_NODES",
            "5",
            "a: &a [1, 2, 3]\nb: [*a, *a]\n",
            "YAML aliases expand to more than the limit of 5",
        ),
    ],
)
def test_each_limit_is_set_by_flag_and_by_environment(
    tmp_path: Path, flag: str, env: str, value: str, text: str, message: str
) -> None:
    path = tmp_path / "input.yaml"
    path.write_text(text)
    by_flag = run_measured([*TRAINER_POLICY, "review", path, flag, value])
    assert_refused(by_flag, f"{path}: {message}", f"({flag} or {env})")
    by_flag_first = run_measured([*TRAINER_POLICY, flag, value, "review", path])
    assert_refused(by_flag_first, f"{path}: {message}")
    by_env = run_measured([*TRAINER_POLICY, "review", path], env={env: value})
    assert_refused(by_env, f"{path}: {message}")


def test_a_folder_is_walked_within_the_entry_limit(tmp_path: Path) -> None:
    folder = tmp_path / "manifests"
    for i in range(30):
        (folder / f"team-{i}").mkdir(parents=True)
        (folder / f"team-{i}" / "notes.txt").write_text("")
    limit = "(--max-folder-entries or TRAINER_POLICY_MAX_FOLDER_ENTRIES)"
    message = f"{folder}: more than the limit of 50 files and folders below it {limit}"
    assert_refused(run_measured([*TRAINER_POLICY, "review", folder, "--max-folder-entries", "50"]), message)
    assert_refused(run_measured([*TRAINER_POLICY, "review", folder], env={"TRAINER_POLICY_MAX_FOLDER_ENTRIES": "50"}))
    # Within the limit: hidden folders are not walked, a symlinked folder (here a loop) is not followed.
    shutil.rmtree(folder)
    (folder / ".git" / "objects").mkdir(parents=True)
    for i in range(100):
        (folder / ".git" / "objects" / f"{i}.json").write_text("{")
    (folder / "loop").symlink_to(folder)
    (folder / "job.yaml").write_text(ACTIVE_REVIEW.read_text())
    walked = run_measured([*TRAINER_POLICY, "review", folder, "--max-folder-entries", "50"])
    assert walked.code in (0, 1) and "job.yaml" in walked.stdout and ".git" not in walked.stdout, walked


def test_review_of_the_root_folder_is_refused_not_walked() -> None:
    """`review /` used to walk the whole machine (over a minute, growing with the disk) before reading a file."""
    result = run_measured([*TRAINER_POLICY, "review", "/"])
    assert_refused(result, "trainer-policy review: /")
    # Which comes first depends on the machine: the limit, or a folder the walk may not read (named, not skipped).
    assert "more than the limit of 100000 files and folders" in result.stderr or "Permission denied" in result.stderr


def test_a_bad_limit_value_names_its_setting(tmp_path: Path) -> None:
    assert_refused(run_measured([*TRAINER_POLICY, "review", ACTIVE_REVIEW, "--max-depth", "0"]), "--max-depth: must be")
    result = run_measured([*TRAINER_POLICY, "review", ACTIVE_REVIEW], env={"TRAINER_POLICY_MAX_DEPTH": "deep"})
    assert_refused(result, "TRAINER_POLICY_MAX_DEPTH: must be a whole number from 1 to 1000000000000, got 'deep'")


@pytest.mark.parametrize("value", ["9" * 26, "1099511627776", "\uff11\uff12", "-5", "1e3", "0x10", ""])
def test_a_limit_out_of_bounds_is_one_line_naming_its_setting(value: str) -> None:
    """Issue 40: 26 digits in TRAINER_POLICY_MAX_INPUT_BYTES ended in an internal OverflowError (and 2^40 in
    "out of memory": the whole limit was asked of read() at once); full-width digits were taken as a number."""
    expected = f"TRAINER_POLICY_MAX_INPUT_BYTES: must be a whole number from 1 to 1000000000000, got {value!r}"
    result = run_measured([*TRAINER_POLICY, "review", ACTIVE_REVIEW], env={"TRAINER_POLICY_MAX_INPUT_BYTES": value})
    assert_refused(result, expected)
    by_flag = run_measured([*TRAINER_POLICY, "review", ACTIVE_REVIEW, "--max-input-bytes", value])
    assert_refused(by_flag, "--max-input-bytes: must be a whole number from 1 to 1000000000000")


def test_the_largest_limit_reads_a_small_file() -> None:
    result = run_measured(
        [*TRAINER_POLICY, "review", ACTIVE_REVIEW, "--objects", ACTIVE_INVENTORY],
        env={"TRAINER_POLICY_MAX_INPUT_BYTES": "1000000000000"},
    )
    assert result.code == 1 and "out of memory" not in result.stderr, result
    assert result.peak_rss_mib < 400


def test_provider_serve_objects_obey_the_limit_flags(tmp_path: Path) -> None:
    jobsets = tmp_path / "jobsets.yaml"
    jobsets.write_text("---\n".join(f"kind: JobSet\nmetadata: {{name: j{i}}}\n" for i in range(3)))
    argv = [*provider_serve(tmp_path, jobsets), "--max-documents", "2"]
    assert_refused(run_measured(argv), f"{jobsets}: more than the limit of 2 documents (--max-documents")


def test_a_large_honest_objects_file_still_loads(tmp_path: Path) -> None:
    """The limits leave room for real inventories: 20,000 JobSets as YAML (about 4 MB) review fine."""
    objects = tmp_path / "objects.yaml"
    docs = [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": f"j{i}", "namespace": "n"}}
        for i in range(20_000)
    ]
    objects.write_text(yaml.safe_dump_all(docs))
    started = time.monotonic()
    result = run_measured([*TRAINER_POLICY, "review", ACTIVE_REVIEW, "--objects", ACTIVE_INVENTORY, objects])
    assert result.code == 1, result  # the sample is denied (its JobSet is active)
    assert time.monotonic() - started < 120


def test_peak_memory_is_the_commands_own_whatever_pytest_holds() -> None:
    """Forked straight from a pytest holding 512 MiB, a child reported that much as its own peak after exec."""
    ballast = b"x" * (512 << 20)
    result = run_measured([sys.executable, "-c", "pass"])
    assert len(ballast) == 512 << 20
    assert result.code == 0, result
    assert 1 < result.peak_rss_mib < 100, result
