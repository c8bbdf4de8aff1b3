"""Every subcommand and flag with random and hostile values and files (issue 14, "Done when").

The properties, for every run:
- no traceback, no exception out of main();
- exit 0, 1 or 2, and 1 ONLY for a real denial (review), a real test failure (test), a real failed
  verification (bundle verify) or drift (generate --check), each proven by its own output;
- exit 2 with one line on stderr (argparse usage errors aside, which print usage and one line);
- after a failure, nothing at all in the output folder.

Runs in-process through main() (the CLI's one error boundary); test_exit_codes.py has real processes.
Network: only 127.0.0.1.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kubeflow_trainer_policy_provider.certs import issue, make_ca
from tests.cli.helpers import (
    ACTIVE_INVENTORY,
    ACTIVE_REVIEW,
    PROJECT_ROOT,
    Result,
    provider_object,
    run_cli,
    write_pair,
)

SETTINGS = settings(
    max_examples=30,
    deadline=None,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
HOSTILE_WORDS = [
    "",
    " ",
    "-",
    "--",
    "0",
    "-1",
    "-5",
    "1",
    "3651",
    "99999",
    "65536",
    "nan",
    "inf",
    "-inf",
    "1e999",
    "0.0",
    "..",
    "../../generator",
    "/",
    "/dev/null",
    ":",
    ":99999",
    "[::1]:0",
    "a" * 300,
    "\u202e\u0000x",
    "x\ny",
    "v2.0",
    "v2.3",
    "v9.9",
    "json",
    "text",
    "RS256",
    "ES384",
    "ES256",
    "http://127.0.0.1:1/",
    "https://127.0.0.1:1/",
    "https://127.0.0.1:99999/",
    "https://",
    "https://[::1",
    "localhost",
    "127.0.0.1",
    "*.x",
    "UPPER",
    "a/b",
]


@dataclass(frozen=True)
class Inputs:
    files: dict[str, Path]
    folders: dict[str, Path]


def _pem_private(key: object) -> bytes:
    return key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _pem_public(key: object) -> bytes:
    return key.public_key().public_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory, built_bundle: Path) -> Inputs:
    base = tmp_path_factory.mktemp("fuzz-inputs")
    files: dict[str, Path] = {}

    def put(name: str, content: bytes | str) -> None:
        path = base / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        files[name] = path

    put("empty.yaml", "")
    put("random.bin", bytes(range(256)) * 3)
    put("deep.json", "[" * 60_000 + "]" * 60_000)
    put("deep-object.json", '{"a":' * 600 + "1" + "}" * 600)
    put("unclosed.yaml", "kind: [unclosed")
    put("list.yaml", "- a\n- b\n")
    put("two-docs.yaml", "a: 1\n---\nb: 2\n")
    put("weird-kind.yaml", "kind: 5\nitems: 3\napiVersion: [1]\n")
    put("review.yaml", ACTIVE_REVIEW.read_text())
    put("inventory.yaml", ACTIVE_INVENTORY.read_text())
    put("parameters.yaml", "trainjob-managed-by: {allowedValues: [a]}\n")
    put("bad-parameters.yaml", "trainjob-managed-by: {allowedValues: 5}\nnope: {}\n")
    put("provider-bad-timeout.yaml", yaml.safe_dump(provider_object("abc")))
    put("broken.rego", "package broken\n\ntest_x if { nope(1) }\n")
    put("failing_test.rego", "package failing_test\n\ntest_fails if { 1 == 2 }\n")
    ca = make_ca("fuzz-ca")
    other = make_ca("other-ca")
    for stem, pair in (("ca", ca), ("other-ca", other), ("tls", issue(ca, "p", ["127.0.0.1"]))):
        write_pair(pair, base, stem)
        files[f"{stem}.crt"], files[f"{stem}.key"] = base / f"{stem}.crt", base / f"{stem}.key"
    p256, p384, rsa_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP384R1()),
        (rsa.generate_private_key(65537, 2048)),
    )
    for name, key in (("p256", p256), ("p384", p384), ("rsa", rsa_key)):
        put(f"{name}.pem", _pem_private(key))
        put(f"{name}.pub", _pem_public(key))
    put(
        "encrypted.pem",
        p256.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"pw")
        ),
    )
    put("bundle.tar.gz", built_bundle.read_bytes())
    put("garbage.tar.gz", b"\x1f\x8b garbage")
    put("kubeconfig", "current-context: a\ncontexts: [{name: a, context: 7}]\n")
    folders = {
        "empty-dir": base / "empty-dir",
        "rego-fail": base / "rego-fail",
        "rego-broken": base / "rego-broken",
        "docs": PROJECT_ROOT / "docs",
        "bundle-v2.0": PROJECT_ROOT / "bundles/gatekeeper/v2.0",
        "fixture-rego-pass": PROJECT_ROOT / "tests/gatekeeper/fixtures/rego-pass",
    }
    for name in ("empty-dir", "rego-fail", "rego-broken"):
        folders[name].mkdir()
    shutil.copy(files["failing_test.rego"], folders["rego-fail"])
    shutil.copy(files["broken.rego"], folders["rego-broken"])
    files["missing"] = base / "missing.yaml"
    return Inputs(files, folders)


def words() -> st.SearchStrategy[str]:
    return st.sampled_from(HOSTILE_WORDS) | st.text(max_size=12)


def mostly(usual: st.SearchStrategy[str], hostile: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """`usual` three times in four, so that runs get past the first check often enough to reach later ones."""
    return st.integers(0, 3).flatmap(lambda i: hostile if i == 0 else usual)


def a_file(inputs: Inputs, *preferred: str) -> st.SearchStrategy[str]:
    anything = st.sampled_from(sorted(str(p) for p in inputs.files.values())) | words()
    if not preferred:
        return anything
    return mostly(st.sampled_from([str(inputs.files[p]) for p in preferred]), anything)


def a_folder(inputs: Inputs) -> st.SearchStrategy[str]:
    return st.sampled_from(sorted(str(p) for p in inputs.folders.values())) | words()


def flags(draw: st.DrawFn, options: dict[str, st.SearchStrategy[str] | None]) -> list[str]:
    """A random subset (at most 4) of `options` (None = a switch), in random order."""
    chosen = draw(st.lists(st.sampled_from(sorted(options)), unique=True, max_size=min(4, len(options))))
    argv: list[str] = []
    for name in chosen:
        strategy = options[name]
        argv += [name] if strategy is None else [name, draw(strategy)]
    return argv


def files_in(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def check(result: Result, command: str, out: Path) -> None:
    event(f"{command} exit {result.code}")
    assert "Traceback" not in result.stderr, result.stderr
    assert result.code in (0, 1, 2), result
    if result.code == 1:
        assert command in ("review", "test", "bundle verify", "generate"), f"{command} exited 1: {result}"
        if command == "review":
            assert result.stdout.startswith(("denied", "{")) and '"allowed": true' not in result.stdout, result
        elif command == "test":
            last = result.stdout.strip().splitlines()[-1]
            assert "failed" in last and (not last.endswith(" 0 failed") or "below the threshold" in result.stdout)
        elif command == "bundle verify":
            assert result.stderr.strip(), "a failed verification says why"
        elif command == "generate":
            assert "out of date" in result.stderr
    if result.code == 2:
        assert result.stderr.strip(), result
        if "usage:" not in result.stderr:
            lines = result.stderr.strip().splitlines()
            if command == "review" and len(lines) > 1:
                # A folder: one line for each document that could not be read, each naming its file.
                assert all(line.startswith("trainer-policy review: ") for line in lines), result.stderr
                assert len(set(lines)) == len(lines), result.stderr
            else:
                assert len(lines) == 1, result.stderr
    if result.code != 0:
        assert files_in(out) == [], f"{command} failed and left {files_in(out)}"


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Also the working directory: a random relative output path (e.g. `certs --provider-yaml <word>`) must land
    here, never in the checkout. Two levels down, so that the drawn `..` and `../..` are this test's own folders,
    not pytest's whole temporary tree (every other test's files)."""
    here = tmp_path / "scratch" / "cwd"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    return here


def fresh(scratch: Path, name: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=scratch))


@settings(SETTINGS, max_examples=40)
@given(data=st.data())
def test_fuzz_review(inputs: Inputs, scratch: Path, data: st.DataObject) -> None:
    out = fresh(scratch, "out")
    argv = [
        "review",
        data.draw(mostly(st.sampled_from([str(inputs.files["review.yaml"]), "-"]), a_file(inputs))),
        *data.draw(mostly(st.just(["--objects", str(inputs.files["inventory.yaml"])]), st.just([]))),
        *flags(
            data.draw,
            {
                "--objects": a_file(inputs, "inventory.yaml"),
                "--provider-url": mostly(st.just("https://127.0.0.1:1/"), words()),
                "--ca-file": a_file(inputs, "ca.crt"),
                "--client-cert": a_file(inputs, "tls.crt"),
                "--client-key": a_file(inputs, "tls.key"),
                "--profile": mostly(st.sampled_from(["v2.0", "v2.3"]), words()),
                "--constraints": mostly(st.just(str(inputs.folders["bundle-v2.0"])), a_folder(inputs) | a_file(inputs)),
                "--parameters": a_file(inputs, "parameters.yaml", "bad-parameters.yaml"),
                "--audit": None,
                "-o": mostly(st.sampled_from(["json", "text"]), words()),
            },
        ),
    ]
    stdin = data.draw(mostly(st.just(ACTIVE_REVIEW.read_text()), st.sampled_from(["", "kind: [", "[" * 70_000])))
    check(run_cli(*argv, stdin=stdin), "review", out)


@SETTINGS
@given(data=st.data())
def test_fuzz_test_command(inputs: Inputs, scratch: Path, data: st.DataObject) -> None:
    out = fresh(scratch, "out")
    folder = data.draw(st.sampled_from(["empty-dir", "rego-fail", "rego-broken", "fixture-rego-pass"]))
    argv = ["test", str(inputs.folders[folder])]
    options = {"--coverage": None, "--threshold": words(), "-q": None, "--profile": st.sampled_from(["v2.0"]) | words()}
    argv += flags(data.draw, options)
    check(run_cli(*argv), "test", out)


@SETTINGS
@given(data=st.data())
def test_fuzz_bundle(inputs: Inputs, scratch: Path, data: st.DataObject) -> None:
    out = fresh(scratch, "out")
    work = fresh(scratch, "work")
    bundle = work / "bundle.tar.gz"
    shutil.copy(inputs.files["bundle.tar.gz"], bundle)  # sign without -o replaces its input: use a copy
    verb = data.draw(st.sampled_from(["build", "sign", "verify"]))
    if verb == "build":
        argv = ["bundle", "build", "--output-dir", str(out / data.draw(st.sampled_from(["dist", "a/b"])))]
        argv += flags(
            data.draw, {"--profile": mostly(st.sampled_from(["v2.0", "v2.3"]), words()), "--revision": words()}
        )
    elif verb == "sign":
        target = data.draw(mostly(st.just(str(bundle)), a_file(inputs, "garbage.tar.gz")))
        argv = ["bundle", "sign", target, "-o", str(out / "signed.tar.gz")]
        argv += ["--signing-key", data.draw(a_file(inputs, "p256.pem", "p384.pem", "rsa.pem", "encrypted.pem"))]
        argv += flags(
            data.draw,
            {
                "--signing-alg": mostly(st.sampled_from(["RS256", "ES256", "ES384", "ES512"]), words()),
                "--key-id": words(),
                "--scope": words(),
            },
        )
    else:
        target = data.draw(a_file(inputs, "bundle.tar.gz"))
        argv = ["bundle", "verify", target]
        argv += flags(
            data.draw,
            {
                "--verification-key": a_file(inputs, "p256.pub", "rsa.pub", "p256.pem"),
                "--key-id": words(),
                "--scope": words(),
            },
        )
    check(run_cli(*argv), f"bundle {verb}", out)


@SETTINGS
@given(data=st.data())
def test_fuzz_certs(inputs: Inputs, scratch: Path, data: st.DataObject) -> None:
    out = fresh(scratch, "out")
    argv = ["certs", "--out-dir", str(out / data.draw(st.sampled_from(["pki", "a/b", "pki/"])))]
    argv += flags(
        data.draw,
        {
            "--service": mostly(st.just("svc"), words()),
            "--namespace": mostly(st.just("ns"), words()),
            "--san": mostly(st.sampled_from(["localhost", "127.0.0.1", "*.example.test"]), words()),
            "--client": mostly(st.just("gatekeeper"), words()),
            "--ca-cert": a_file(inputs, "ca.crt", "other-ca.crt", "tls.crt"),
            "--ca-key": a_file(inputs, "ca.key", "other-ca.key", "encrypted.pem", "rsa.pem"),
            "--days": mostly(st.sampled_from(["1", "365"]), st.sampled_from(["0", "-5", "3651"]) | words()),
            "--provider-yaml": mostly(st.just(str(out / "provider.yaml")), st.just(str(out / "no/x.yaml")) | words()),
            "--provider-name": mostly(st.just("my-provider"), words()),
            "--timeout": mostly(st.just("3"), st.sampled_from(["0", "301"]) | words()),
        },
    )
    check(run_cli(*argv), "certs", out)


@settings(SETTINGS, max_examples=20)
@given(data=st.data())
def test_fuzz_provider_serve(inputs: Inputs, scratch: Path, data: st.DataObject) -> None:
    """Never given a usable serving certificate, so a run can only fail (it must never start serving here)."""
    out = fresh(scratch, "out")
    unusable_cert = st.sampled_from(
        [str(inputs.files[n]) for n in ("random.bin", "ca.key", "empty.yaml", "missing", "p256.pub")]
    )
    argv = ["provider", "serve", "--tls-cert", data.draw(unusable_cert), "--tls-key", data.draw(a_file(inputs))]
    argv += flags(
        data.draw,
        {
            "--listen": st.sampled_from(["127.0.0.1:0", ":99999", "127.0.0.1:8443", "nope"]) | words(),
            "--health-port": words(),
            "--client-ca": a_file(inputs, "ca.crt"),
            "--objects": a_file(inputs, "inventory.yaml", "deep.json"),
            "--max-keys": words(),
            "--max-body-bytes": words(),
            "--request-timeout": words(),
            "--max-connections": words(),
            "--idle-timeout": words(),
            "--watch-timeout": words(),
            "--log-level": words(),
        },
    )
    result = run_cli(*argv)
    check(result, "provider serve", out)
    assert result.code == 2


@settings(SETTINGS, max_examples=6)
@given(profile=st.sampled_from(["v2.0", "v9.9", "../x"]) | words())
def test_fuzz_generate_check(scratch: Path, profile: str) -> None:
    """`generate --check` only: a plain `generate` would write into this checkout."""
    out = fresh(scratch, "out")
    check(run_cli("generate", "--check", "--profile", profile), "generate", out)
