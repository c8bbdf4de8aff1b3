"""Issue 14 items 2, 3, 5, 7 and 8 (CLI parts): each reproduced as a user hit it, now exit 2 with one line.

Exit 1 means "denied" or "a check failed" to CI; these inputs used to produce it (or 0) by accident.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from kubeflow_trainer_policy.bundle.archive import read_archive, write_archive
from kubeflow_trainer_policy.bundle.signing import SigningKey, signatures_document, signed_token
from kubeflow_trainer_policy.cli.main import main
from kubeflow_trainer_policy_provider.certs import make_ca
from tests.cli.helpers import (
    ACTIVE_INVENTORY,
    ACTIVE_REVIEW,
    PROJECT_ROOT,
    assert_error,
    external_data_constraints,
    run_cli,
    run_process,
    serving_pki,
    trainjob_update_review,
    write_yaml,
)

# --- item 2: review exits 0 when no constraint was loaded at all ---------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        ["--constraints", str(PROJECT_ROOT / "docs")],
        ["--constraints", "EMPTY"],
        ["--profile", "../../generator"],
        ["--constraints", str(PROJECT_ROOT / "bundles/gatekeeper/v2.0/trainjob-managed-by/template.yaml")],
    ],
    ids=["docs-folder", "empty-folder", "profile-escaping-bundles", "template-without-constraint"],
)
def test_review_with_no_constraint_is_an_error_not_allowed(tmp_path: Path, flags: list[str]) -> None:
    (tmp_path / "empty").mkdir()
    flags = [str(tmp_path / "empty") if f == "EMPTY" else f for f in flags]
    result = run_cli("review", ACTIVE_REVIEW, *flags)
    assert_error(result)
    assert result.stdout == ""
    assert "no Constraint found" in result.stderr or "unknown profile" in result.stderr


# --- item 3: unexpected exceptions exited 1 (the "denied" code) with a traceback ----------------


def test_json_nested_500_deep(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"a":' * 500 + "1" + "}" * 500)
    assert_error(run_cli("review", deep), "deep.json")
    deeper = tmp_path / "deeper.json"
    deeper.write_text("[" * 100_000 + "]" * 100_000)
    assert_error(run_cli("review", deeper), "deeper.json: nested deeper than the limit of 512 (--max-depth")


def test_provider_with_a_string_timeout_names_the_field(tmp_path: Path) -> None:
    folder = external_data_constraints(tmp_path / "constraints", "abc")
    result = run_cli("review", ACTIVE_REVIEW, "--constraints", folder)
    assert_error(result, "provider.yaml: spec.timeout: must be a whole number of seconds >= 1, got 'abc'")


def test_plain_http_provider_url(tmp_path: Path) -> None:
    pki = serving_pki(tmp_path / "pki")
    result = run_cli("review", ACTIVE_REVIEW, "--provider-url", "http://127.0.0.1:1/", "--ca-file", pki["ca"])
    assert_error(result, "--provider-url: the provider URL must be https://", "'http://127.0.0.1:1/'")


def test_closed_stdout_pipe_is_no_traceback_and_not_exit_1() -> None:
    """A real process whose stdout reader is gone before it writes (`review ... | true`)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubeflow_trainer_policy.cli.main",
            "review",
            str(ACTIVE_REVIEW),
            "--objects",
            str(ACTIVE_INVENTORY),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=PROJECT_ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader goes away
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 2
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert stderr.strip().splitlines() == ["trainer-policy review: stdout was closed before all output was written"]


def test_encrypted_signing_key(tmp_path: Path, built_bundle: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    encrypted = tmp_path / "enc.pem"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    out = tmp_path / "out"
    out.mkdir()
    result = run_cli(
        "bundle",
        "sign",
        built_bundle,
        "--signing-key",
        encrypted,
        "--signing-alg",
        "ES256",
        "-o",
        out / "signed.tar.gz",
    )
    assert_error(result, "enc.pem: the key is encrypted")
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("days", ["-5", "0", "3651"])
def test_certs_nonsense_days(tmp_path: Path, days: str) -> None:
    result = run_cli("certs", "--out-dir", tmp_path / "pki", "--days", days)
    assert_error(result, f"--days: validity must be 1 to 3650 days, got {days}")
    assert not (tmp_path / "pki").exists()


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--listen", ":99999", "--listen: want HOST:PORT with a port from 1 to 65535, got ':99999'"),
        ("--max-connections", "0", "--max-connections: must be at least 1, got 0"),
        ("--request-timeout", "-1", "--request-timeout: must be a positive number of seconds, got -1.0"),
        ("--health-port", "70000", "--health-port: must be 1 to 65535, got 70000"),
    ],
)
def test_provider_serve_nonsense_flags(tmp_path: Path, flag: str, value: str, message: str) -> None:
    pki = serving_pki(tmp_path / "pki")
    result = run_cli("provider", "serve", "--tls-cert", pki["cert"], "--tls-key", pki["key"], flag, value)
    assert_error(result, message)


@pytest.mark.parametrize(
    "kubeconfig",
    [
        "clusters: [unclosed",
        "just a string",
        "current-context: a\ncontexts: [{name: a, context: not-a-mapping}]",
        "current-context: [1]\ncontexts: 7",
    ],
)
def test_garbage_kubeconfig(tmp_path: Path, kubeconfig: str) -> None:
    pki = serving_pki(tmp_path / "pki")
    config = tmp_path / "kubeconfig"
    config.write_text(kubeconfig)
    result = run_cli(
        "provider",
        "serve",
        "--listen",
        "127.0.0.1:1",
        "--tls-cert",
        pki["cert"],
        "--tls-key",
        pki["key"],
        "--kubeconfig",
        config,
    )
    assert_error(result, "kubeconfig")


def test_an_internal_error_is_one_line_and_a_traceback_only_with_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake fault (a bug cannot be caused on purpose): the boundary turns any exception into exit 2."""
    from kubeflow_trainer_policy.cli import test_command

    def broken(_args: object) -> int:
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(test_command, "run", broken)
    result = run_cli("test")
    assert_error(result, "trainer-policy test: internal error: ZeroDivisionError: simulated bug", "--debug")
    debug = run_cli("--debug", "test")
    assert debug.code == 2 and "Traceback" in debug.stderr and "ZeroDivisionError" in debug.stderr


def test_a_real_process_never_shows_a_traceback(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    for args in (["review", deep], ["certs", "--out-dir", tmp_path / "x", "--days", "-5"], ["bundle"]):
        result = run_process(*args)
        assert result.code == 2 and "Traceback" not in result.stderr, result


# --- item 5: a CA key that does not belong to the CA certificate --------------------------------


def test_certs_with_a_foreign_ca_key_writes_nothing(tmp_path: Path) -> None:
    a, b = make_ca("a"), make_ca("b")
    (tmp_path / "a.crt").write_bytes(a.cert_pem)
    (tmp_path / "b.key").write_bytes(b.key_pem)
    result = run_cli(
        "certs",
        "--out-dir",
        tmp_path / "out",
        "--ca-cert",
        tmp_path / "a.crt",
        "--ca-key",
        tmp_path / "b.key",
        "--provider-yaml",
        tmp_path / "provider.yaml",
    )
    assert_error(result, "a.crt", "b.key", "CA key does not belong to the CA certificate")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.crt", "b.key"]


def test_certs_with_the_right_ca_key_signs_a_verifiable_certificate(tmp_path: Path) -> None:
    import ssl

    ca = make_ca("mine")
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem)
    (tmp_path / "ca.key").write_bytes(ca.key_pem)
    result = run_cli(
        "certs",
        "--out-dir",
        tmp_path / "out",
        "--ca-cert",
        tmp_path / "ca.crt",
        "--ca-key",
        tmp_path / "ca.key",
        "--san",
        "127.0.0.1",
    )
    assert result.code == 0, result
    context = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    context.load_cert_chain(tmp_path / "out/tls.crt", tmp_path / "out/tls.key")  # the pair matches
    assert not (tmp_path / "out/ca.key").exists(), "the given CA key is not copied"


# --- item 6: a misspelt AdmissionReview kind was taken as a bare object of an unknown kind and allowed ---


@pytest.mark.parametrize(
    ("kind", "api_version", "field"),
    [
        ("AdmissionReviewX", "admission.k8s.io/v1", "kind"),
        ("AdmissionReview", "admission.k8s.io/v2", "apiVersion"),
        ("admissionreview", "admission.k8s.io/v1", "kind"),
    ],
)
def test_misspelt_admission_review_is_an_input_error(tmp_path: Path, kind: str, api_version: str, field: str) -> None:
    review = yaml.safe_load(Path(ACTIVE_REVIEW).read_text())
    review.update({"kind": kind, "apiVersion": api_version})
    path = write_yaml(tmp_path / "review.yaml", review)
    result = run_cli("review", path, "--objects", ACTIVE_INVENTORY)
    assert_error(result, str(path), field)
    assert result.stdout == ""


# --- item 7: half-written files ------------------------------------------------------------------


def test_failed_bundle_build_leaves_no_partial_file(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    (out / "kubeflow-trainer-policy-v2.0.tar.gz").mkdir(parents=True)  # the target name is taken by a folder
    result = run_cli("bundle", "build", "--output-dir", out, "--profile", "v2.0")
    assert_error(result, "kubeflow-trainer-policy-v2.0.tar.gz")
    assert [p.name for p in out.iterdir()] == ["kubeflow-trainer-policy-v2.0.tar.gz"]
    assert not list(out.rglob("*.partial")) and not list(out.rglob("*.tmp"))


def test_failed_certs_into_an_existing_folder_moves_nothing_in(tmp_path: Path) -> None:
    out = tmp_path / "pki"
    (out / "tls.key").mkdir(parents=True)  # a real fault: one output name is taken by a folder
    result = run_cli("certs", "--out-dir", out)
    assert_error(result, "tls.key")
    assert [p.name for p in out.iterdir()] == ["tls.key"], "no ca.crt, tls.crt ... moved in before the failure"
    assert [p.name for p in tmp_path.iterdir()] == ["pki"], "no staging folder left next to it"


def test_certs_failing_midway_leaves_no_folder_fake_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake fault (issuing cannot be made to fail for real after validation): nothing is left behind."""
    import kubeflow_trainer_policy_provider.certs

    calls = {"n": 0}
    real_issue = kubeflow_trainer_policy_provider.certs.issue

    def issue_then_fail(*args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device (simulated)")
        return real_issue(*args, **kwargs)

    monkeypatch.setattr(kubeflow_trainer_policy_provider.certs, "issue", issue_then_fail)
    result = run_cli("certs", "--out-dir", tmp_path / "pki", "--client", "gatekeeper")
    assert_error(result, "No space left on device")
    assert list(tmp_path.iterdir()) == []


def test_generate_never_deletes_a_file_it_did_not_write(tmp_path: Path) -> None:
    from kubeflow_trainer_policy.profiles import UNIT_TEST_PROFILE, generated_profiles, get_profile
    from kubeflow_trainer_policy.render.tree import render_tree, write_tree

    tree = render_tree(generated_profiles(), get_profile(UNIT_TEST_PROFILE))
    write_tree(tree, tmp_path)
    notes = tmp_path / f"profiles/{UNIT_TEST_PROFILE}/my-notes.rego"
    notes.write_text("package mine\n")
    stale = tmp_path / "docs/policies/removed-rule.md"
    stale.write_text((tmp_path / "docs/policies/README.md").read_text())  # a generated file no longer generated
    from kubeflow_trainer_policy.errors import InputError

    refused = f"profiles/{UNIT_TEST_PROFILE}/my-notes.rego: not written by `trainer-policy generate`"
    with pytest.raises(InputError, match=re.escape(refused)):
        write_tree(tree, tmp_path)
    assert notes.read_text() == "package mine\n" and stale.exists(), "refused before touching anything"
    notes.unlink()
    assert write_tree(tree, tmp_path) == ["docs/policies/removed-rule.md"]
    assert not stale.exists(), "a stale generated file is removed"


# --- item 8: wrong blame, late reports, nonsense limits, weak key checks, empty test runs --------


def test_verify_says_the_manifest_is_not_json_and_does_not_blame_the_key(tmp_path: Path, built_bundle: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    files = read_archive(built_bundle)
    files[".signatures.json"] = signatures_document(signed_token(files, SigningKey("ES256", key), "default"))
    files[".manifest"] = b"{not json"
    write_archive(tmp_path / "b.tar.gz", files)
    public = tmp_path / "pub.pem"
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    result = run_cli("bundle", "verify", tmp_path / "b.tar.gz", "--verification-key", public)
    assert result.code == 1, result
    assert "signature: .manifest is not valid JSON" in result.stderr
    assert "pub.pem" not in result.stderr


def test_a_bad_ca_file_is_reported_up_front(tmp_path: Path) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    review = write_yaml(tmp_path / "r.yaml", trainjob_update_review())
    result = run_cli("review", review, "--provider-url", "https://127.0.0.1:1/", "--ca-file", bad)
    assert_error(result, "ca.pem: not a readable PEM CA bundle")
    assert result.stdout == "", "reported before any evaluation"


def test_es384_refuses_a_p256_key(tmp_path: Path, built_bundle: Path) -> None:
    key = tmp_path / "p256.pem"
    key.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    result = run_cli(
        "bundle", "sign", built_bundle, "--signing-key", key, "--signing-alg", "ES384", "-o", tmp_path / "s.tar.gz"
    )
    assert_error(result, "p256.pem: the key's curve secp256r1 does not fit ES384 (it needs secp384r1)")
    assert not (tmp_path / "s.tar.gz").exists()


def test_test_of_an_empty_folder_fails_clearly(tmp_path: Path) -> None:
    result = run_cli("test", tmp_path)
    assert_error(result, f"{tmp_path}: no tests found")
    assert "0 passed" not in result.stdout


# --- newcomer gaps -------------------------------------------------------------------------------


def test_review_reads_stdin() -> None:
    text = ACTIVE_REVIEW.read_text()
    result = run_cli("review", "-", "--objects", ACTIVE_INVENTORY, "-o", "json", stdin=text)
    assert result.code == 1, result
    assert json.loads(result.stdout)["allowed"] is False
    process = run_process("review", "-", "--objects", ACTIVE_INVENTORY, stdin=text)
    assert process.code == 1 and process.stdout.startswith("denied"), process


def test_every_option_says_its_default() -> None:
    import argparse

    from kubeflow_trainer_policy.cli.main import build_parser

    def walk(parser: argparse.ArgumentParser, name: str) -> list[str]:
        missing = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    missing += walk(sub, f"{name} {sub_name}")
            elif (
                action.option_strings
                and not action.required
                and not isinstance(action, argparse._HelpAction)
                and (not action.help or "default" not in action.help)
            ):
                missing.append(f"{name} {action.option_strings[-1]}")
        return missing

    assert walk(build_parser(), "trainer-policy") == []


def test_help_lists_every_command_without_importing_them() -> None:
    code = (
        "import sys; from kubeflow_trainer_policy.cli.main import main; main(['--help']) ;"
        "print(sorted(m for m in sys.modules "
        "if m.startswith(('kubeflow_trainer_policy.cli.', 'jsonschema', 'cryptography'))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=60)
    for command in ("generate", "review", "test", "bundle", "provider", "certs"):
        assert f"    {command}" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "['kubeflow_trainer_policy.cli.main']"


def test_review_imports_only_what_it_needs() -> None:
    code = (
        "import sys; from kubeflow_trainer_policy.cli.main import main; "
        f"rc = main(['review', {str(ACTIVE_REVIEW)!r}, '--objects', {str(ACTIVE_INVENTORY)!r}]); "
        "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in "
        "('requests', 'cryptography', 'urllib3', 'http', 'jsonschema') or m.startswith(("
        "'kubeflow_trainer_policy.bundle', 'kubeflow_trainer_policy.render', 'kubeflow_trainer_policy.cli.bundle', "
        "'kubeflow_trainer_policy.cli.certs', 'kubeflow_trainer_policy.cli.generate'))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=60)
    assert proc.stdout.strip().splitlines()[-1] == "1 []", proc.stdout + proc.stderr


def test_usage_errors_exit_2() -> None:
    assert main(["review"]) == 2
    assert main(["no-such-command"]) == 2
    assert main(["--help"]) == 0
