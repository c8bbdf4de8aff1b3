"""Whether the real OPA activates a bundle: `opa run --bundle FILE` loads it as OPA's runtime does (signature
verified with --verification-key, or --skip-verify), writes it into the store and compiles it with its data
(bundle.Activate). With no --server, `opa` starts its REPL, which ends at
once on an empty stdin: the exit status and stderr say whether the bundle activated."""

from __future__ import annotations

import base64
import json
import sys
import tempfile
from pathlib import Path

from kubeflow_trainer_policy.bundle.archive import write_archive
from kubeflow_trainer_policy.bundle.build import SIGNATURES
from kubeflow_trainer_policy.errors import EngineError, InputError
from kubeflow_trainer_policy.opa.run import run_opa
from kubeflow_trainer_policy.opa.toolchain import OpaUnavailable, ToolchainError


def _token_header(files: dict[str, bytes]) -> dict[str, str]:
    """The JOSE header of the bundle's first signature (alg, kid), unverified: OPA needs both named."""
    try:
        token = json.loads(files[SIGNATURES])["signatures"][0]
        encoded = token.split(".")[0]
        header = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return {}
    return header if isinstance(header, dict) else {}


def verification_flags(files: dict[str, bytes], key_file: Path | None, key_id: str = "", scope: str = "") -> list[str]:
    """OPA's verification flags: the key with the token's algorithm, and the key id asked for (else the
    token's own kid, as `bundle verify --key-id ''` accepts any); without a key, --skip-verify."""
    if key_file is None:
        return ["--skip-verify"]
    header = _token_header(files)
    flags = ["--verification-key", str(key_file), "--verification-key-id", key_id or header.get("kid") or "default"]
    flags += ["--signing-alg", str(header.get("alg") or "RS256")]
    return flags + (["--scope", scope] if scope else [])


def activation_problems(
    files: dict[str, bytes], key_file: Path | None = None, key_id: str = "", scope: str = ""
) -> list[str]:
    """Empty when OPA activates the bundle; else OPA's error, one line. The data files are first read here, with
    the reader's limits (a data.yaml is as hostile as any YAML), so no alias bomb reaches OPA's own YAML parser."""
    problems = data_problems(files)
    if problems:
        return problems
    with tempfile.TemporaryDirectory(prefix="trainer-policy-bundle-") as tmp:
        path = Path(tmp) / "bundle.tar.gz"
        write_archive(path, files)
        try:
            result = run_opa(
                ["run", "--bundle", *verification_flags(files, key_file, key_id, scope), path], check=False
            )
        except OpaUnavailable as exc:
            return _embedded_problems(files, exc)
        except ToolchainError as exc:
            raise InputError("opa", str(exc)) from exc
    if result.returncode == 0:
        return []
    # `opa run` without --server is the REPL, which prints an activation error on stdout, not stderr.
    output = result.stderr if result.stderr.strip() else result.stdout
    lines = [line.strip() for line in output.splitlines() if line.strip()] or [f"exit {result.returncode}"]
    return [f"OPA refuses to activate it: {' '.join(lines)}".replace(str(path), "bundle")]


def data_problems(files: dict[str, bytes]) -> list[str]:
    """The bundle's data files parsed within the reader's limits and merged as OPA merges them (one line per
    problem): a file that does not parse, or data files that conflict."""
    from kubeflow_trainer_policy.bundle.loader import bundle_data, merged_data

    try:
        merged_data(bundle_data(files))
    except ValueError as exc:
        return [" ".join(str(exc).split())]
    return []


def _embedded_problems(files: dict[str, bytes], why: OpaUnavailable) -> list[str]:
    """Without any real OPA (an installed package on a machine with no `opa`), the bundle's modules and data
    are compiled on the embedded engine, and stderr says so: that OPA is newer than Gatekeeper's, so it may
    accept what an older one refuses (the shipped bundles were checked on every pinned OPA when they were built)."""
    from kubeflow_trainer_policy.bundle.loader import load_bundle
    from kubeflow_trainer_policy.engine import EmbeddedOpaEngine

    print(f"note: activation checked on the embedded OPA only ({why})", file=sys.stderr)
    engine = EmbeddedOpaEngine()
    try:
        load_bundle(engine, files)
        engine.eval_query("true")  # preparing a query compiles every module, as activation does
    except (EngineError, ValueError) as exc:
        return [f"OPA refuses to activate it: {' '.join(str(exc).split())}"]
    return []
