"""Exec credential plugins that misbehave, as real processes (no API server needed: the plugin runs before
any call): a token with CR/LF, helpers left running after a timeout, endless output, bytes that are not an
ExecCredential. Each failure names the plugin, never the token; no token reaches a log line or an answer."""

from __future__ import annotations

import io
import json
import os
import stat
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeflow_trainer_policy_provider import kube_auth
from kubeflow_trainer_policy_provider.cli import main as provider_main
from kubeflow_trainer_policy_provider.kube_auth import ExecPlugin, KubeAuthError, KubeCredentials
from kubeflow_trainer_policy_provider.kube_source import KubeJobSetSource, WatchSettings, redact
from kubeflow_trainer_policy_provider.logs import JsonLogger
from kubeflow_trainer_policy_provider.metrics import ProviderMetrics
from tests.provider.conftest import Pki
from tests.provider.helpers import wait_until

SECRET = "s3cr3t-t0ken-d0-not-log-me"


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "plugin.py"
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _credential(status: dict[str, Any]) -> str:
    return json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": status})


def test_exec_token_with_cr_lf_is_refused_without_being_quoted(tmp_path: Path) -> None:
    body = f"print({_credential({'token': SECRET + chr(13) + chr(10) + 'X-Injected: 1'})!r})\n"
    plugin = ExecPlugin(command=str(_script(tmp_path, body)))
    with pytest.raises(KubeAuthError) as raised:
        plugin.run()
    message = str(raised.value)
    assert "exec credential plugin" in message and "plugin.py" in message and "control" in message
    assert SECRET not in message and "\n" not in message


def test_exec_token_surrounding_whitespace_is_dropped(tmp_path: Path) -> None:
    plugin = ExecPlugin(command=str(_script(tmp_path, f"print({_credential({'token': ' ' + SECRET + chr(10)})!r})\n")))
    assert plugin.run()["token"] == SECRET


def test_watch_failed_lines_and_answers_never_carry_the_token() -> None:
    """Credentials holding a token that cannot be a header (as the exec plugin returned before it was checked):
    requests quotes the header in its error; neither the log lines nor the per-key errors may."""
    logs = io.StringIO()
    creds = KubeCredentials(server="https://127.0.0.1:9", token=SECRET + "\r\nX-Injected: 1")
    source = KubeJobSetSource(creds, ProviderMetrics(), JsonLogger(logs), WatchSettings(backoff_initial=0.05))
    source.start()
    try:
        wait_until(lambda: logs.getvalue().count("watch_failed") >= 2, timeout=10)
    finally:
        source.stop()
    lookup = source.lookup("team-a", "job")
    text = logs.getvalue()
    assert "InvalidHeader" in text and "InvalidHeader" in lookup.error  # the failure is still said
    for part in (SECRET, "X-Injected"):
        assert part not in text and part not in lookup.error
    for line in text.splitlines():
        json.loads(line)  # one record per line


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_exec_plugin_timeout_kills_its_whole_process_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_auth, "EXEC_TIMEOUT_SECONDS", 1.0)
    pid_file = tmp_path / "child.pid"
    body = f"""\
        import subprocess, time
        child = subprocess.Popen(["sleep", "120"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(120)
        """
    plugin = ExecPlugin(command=str(_script(tmp_path, body)))
    with pytest.raises(KubeAuthError) as raised:
        plugin.run()
    child = int(pid_file.read_text())
    try:
        wait_until(lambda: not _alive(child), timeout=5)  # the plugin's helper died with it
    finally:
        if _alive(child):
            os.kill(child, 9)
    assert "plugin.py" in str(raised.value)
    assert "did not finish within 1s; its process group was killed" in str(raised.value)


def test_exec_plugin_endless_output_is_cut_at_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_auth, "EXEC_TIMEOUT_SECONDS", 10.0)  # the old code read all of it until this ran out
    body = """\
        import sys
        chunk = b"x" * 65536
        while True:
            sys.stdout.buffer.write(chunk)
        """
    plugin = ExecPlugin(command=str(_script(tmp_path, body)))
    with pytest.raises(KubeAuthError, match=rf"plugin\.py.*printed more than {kube_auth.EXEC_MAX_OUTPUT_BYTES} bytes"):
        plugin.run()


@pytest.mark.parametrize(
    "body",
    [
        "print('[1, 2]')\n",
        f"print({_credential({'token': 5})!r})\n",
        'print(\'{"kind": "ExecCredential", "status": {"clientCertificateData": 1, "clientKeyData": 2}}\')\n',
    ],
    ids=["json-array", "token-number", "cert-numbers"],
)
def test_exec_plugin_output_of_the_wrong_shape_is_an_error_naming_the_plugin(tmp_path: Path, body: str) -> None:
    script = _script(tmp_path, body)
    with pytest.raises(KubeAuthError, match=f"exec credential plugin {str(script)!r}"):
        ExecPlugin(command=str(script)).run()


def test_exec_plugin_random_bytes_are_blamed_on_the_plugin_not_the_kubeconfig(
    tmp_path: Path, pki: Pki, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script(tmp_path, "import random, sys\nsys.stdout.buffer.write(random.Random(40).randbytes(4096))\n")
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script)}}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(config))
    code = provider_main(
        ["serve", "--listen", "127.0.0.1:18444", "--tls-cert", str(pki.cert), "--tls-key", str(pki.key),
         "--kubeconfig", str(path)]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert f"exec credential plugin {str(script)!r}" in err[0], err[0]
    assert "not a usable kubeconfig" not in err[0] and "internal error" not in err[0], err[0]


def test_redaction_keeps_messages_readable() -> None:
    message = "Max retries exceeded with url: /apis/jobset.x-k8s.io (Bearer abc)\r\n"
    assert redact(message, "x") == "Max retries exceeded with url: /apis/jobset.x-k8s.io (Bearer [REDACTED] "
    assert redact(f"header {SECRET!r}", SECRET) == "header '[REDACTED]'"
