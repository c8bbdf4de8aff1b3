"""The provider's Kubernetes credentials against the real kube-apiserver: $KUBECONFIG (merged as kubectl merges
it), exec credential plugins (real processes: tokens, expiry, a new credential after a 401, client
certificates), and the kubeconfig features it refuses with one line instead of calling the API without
credentials."""

from __future__ import annotations

import base64
import json
import stat
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeflow_trainer_policy.cli.main import main
from kubeflow_trainer_policy_provider.certs import KeyPair, issue
from kubeflow_trainer_policy_provider.kube_auth import KubeAuthError, default_credentials, from_kubeconfig
from kubeflow_trainer_policy_provider.kube_source import KubeJobSetSource
from kubeflow_trainer_policy_provider.logs import JsonLogger
from kubeflow_trainer_policy_provider.metrics import ProviderMetrics
from tests.kube.cluster import KubeCluster

pytestmark = pytest.mark.kube


def _kubeconfig(cluster: KubeCluster, user: dict[str, Any], **cluster_extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {"server": cluster.url, "certificate-authority": str(cluster.ca_file), **cluster_extra},
            }
        ],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }


def _write(path: Path, body: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(body))
    return path


def _plugin(tmp_path: Path, statuses: list[dict[str, Any]]) -> Path:
    """An exec plugin (a real process) answering the next of `statuses` per run, recording each run's
    $KUBERNETES_EXEC_INFO and arguments in runs.jsonl."""
    (tmp_path / "statuses.json").write_text(json.dumps(statuses))
    script = tmp_path / "plugin.py"
    script.write_text(
        textwrap.dedent(
            f"""\
            #!{sys.executable}
            import json, os, pathlib, sys
            here = pathlib.Path({str(tmp_path)!r})
            runs = here / "runs.jsonl"
            count = len(runs.read_text().splitlines()) if runs.exists() else 0
            with runs.open("a") as log:
                log.write(json.dumps({{"info": json.loads(os.environ["KUBERNETES_EXEC_INFO"]), "argv": sys.argv[1:],
                                       "env": os.environ.get("PLUGIN_ENV")}}) + "\\n")
            statuses = json.loads((here / "statuses.json").read_text())
            status = statuses[min(count, len(statuses) - 1)]
            if status.get("fail"):
                print("token service unreachable", file=sys.stderr)
                sys.exit(3)
            print(json.dumps({{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                               "status": status}}))
            """
        )
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _runs(tmp_path: Path) -> list[dict[str, Any]]:
    runs = tmp_path / "runs.jsonl"
    return [json.loads(line) for line in runs.read_text().splitlines()] if runs.exists() else []


def _exec_user(script: Path) -> dict[str, Any]:
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(script),
            "args": ["token", "--cluster", "test"],
            "env": [{"name": "PLUGIN_ENV", "value": "from-kubeconfig"}],
            "interactiveMode": "Never",
            "provideClusterInfo": True,
        }
    }


def _lists_jobsets(creds: Any) -> bool:
    source = KubeJobSetSource(creds, ProviderMetrics(), JsonLogger(min_level="error"))
    source.start()
    try:
        return source.wait_ready(15)
    finally:
        source.stop()


def test_exec_plugin_token_reaches_the_api(kube_cluster: KubeCluster, tmp_path: Path) -> None:
    script = _plugin(tmp_path, [{"token": kube_cluster.token}])
    path = _write(tmp_path / "config", _kubeconfig(kube_cluster, _exec_user(script)))
    creds = from_kubeconfig(path)
    creds.start()
    assert _lists_jobsets(creds)
    (run,) = _runs(tmp_path)  # no expiry: one run serves every call
    assert run["argv"] == ["token", "--cluster", "test"] and run["env"] == "from-kubeconfig"
    assert run["info"]["apiVersion"] == "client.authentication.k8s.io/v1"
    assert run["info"]["spec"]["interactive"] is False
    assert run["info"]["spec"]["cluster"]["server"] == kube_cluster.url


def test_exec_plugin_runs_again_after_expiry_and_after_a_401(kube_cluster: KubeCluster, tmp_path: Path) -> None:
    expired = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
    script = _plugin(
        tmp_path,
        [
            {"token": kube_cluster.token, "expirationTimestamp": expired},  # start(): already expired
            {"token": "revoked-token"},  # the API answers 401 to it
            {"token": kube_cluster.token},
        ],
    )
    creds = from_kubeconfig(_write(tmp_path / "config", _kubeconfig(kube_cluster, _exec_user(script))))
    creds.start()
    assert creds.bearer_token() == "revoked-token" and len(_runs(tmp_path)) == 2
    assert _lists_jobsets(creds)  # first list: 401, the credential is fetched again, the re-list succeeds
    assert len(_runs(tmp_path)) == 3 and creds.bearer_token() == kube_cluster.token


def test_exec_plugin_client_certificate_authenticates(kube_cluster: KubeCluster, tmp_path: Path) -> None:
    ca = KeyPair(kube_cluster.ca_file.read_bytes(), (kube_cluster.workdir / "ca.key").read_bytes())
    client = issue(ca, "exec-cert-user", [], client=True)
    script = _plugin(
        tmp_path,
        [{"clientCertificateData": client.cert_pem.decode(), "clientKeyData": client.key_pem.decode()}],
    )
    creds = from_kubeconfig(_write(tmp_path / "config", _kubeconfig(kube_cluster, _exec_user(script))))
    creds.start()
    response = creds.session().get(f"{kube_cluster.url}/apis/jobset.x-k8s.io/v1alpha2/jobsets", timeout=10)
    # Authenticated as the certificate's subject (RBAC then forbids it: it has no role), not anonymous.
    assert response.status_code == 403 and 'User \\"exec-cert-user\\"' in response.text, response.text


def test_kubeconfig_env_merges_files_like_kubectl(
    kube_cluster: KubeCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = _kubeconfig(kube_cluster, {"token": kube_cluster.token})
    first = _write(tmp_path / "first", {"current-context": "ctx", "users": full["users"]})
    second = _write(tmp_path / "second", {**full, "current-context": "other", "users": [{"name": "u", "user": {}}]})
    monkeypatch.setenv("KUBECONFIG", f"{first}:{tmp_path / 'missing'}:{second}")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")  # $KUBECONFIG comes before in-cluster
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    creds, where = default_credentials()
    assert where.startswith("$KUBECONFIG=") and creds.token == kube_cluster.token
    assert _lists_jobsets(creds)


@pytest.mark.parametrize(
    ("user", "cluster", "named"),
    [
        ({"auth-provider": {"name": "gcp"}}, {}, "user.auth-provider"),
        ({"username": "a", "password": "b"}, {}, "user.username"),
        ({"token": "t", "as": "someone"}, {}, "user.as"),
        ({"token": "t"}, {"proxy-url": "http://proxy:3128"}, "cluster.proxy-url"),
        ({"token": "t"}, {"insecure-skip-tls-verify": True}, "cluster.insecure-skip-tls-verify"),
    ],
)
def test_unsupported_kubeconfig_features_are_refused(
    kube_cluster: KubeCluster, tmp_path: Path, user: dict, cluster: dict, named: str
) -> None:
    path = _write(tmp_path / "config", _kubeconfig(kube_cluster, user, **cluster))
    with pytest.raises(KubeAuthError, match=named.replace(".", r"\.")):
        from_kubeconfig(path)


def test_serve_stops_with_one_line_when_the_exec_plugin_fails(
    kube_cluster: KubeCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str], pki: Any
) -> None:
    script = _plugin(tmp_path, [{"fail": True}])
    path = _write(tmp_path / "config", _kubeconfig(kube_cluster, _exec_user(script)))
    code = main(
        ["provider", "serve", "--listen", "127.0.0.1:18443", "--tls-cert", str(pki.cert), "--tls-key", str(pki.key),
         "--kubeconfig", str(path)]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "exited 3: token service unreachable" in err[0] and str(path) in err[0]


def test_certificate_authority_data_is_used(kube_cluster: KubeCluster, tmp_path: Path) -> None:
    data = base64.b64encode(kube_cluster.ca_file.read_bytes()).decode()
    config = _kubeconfig(kube_cluster, {"token": kube_cluster.token})
    del config["clusters"][0]["cluster"]["certificate-authority"]
    config["clusters"][0]["cluster"]["certificate-authority-data"] = data
    assert _lists_jobsets(from_kubeconfig(_write(tmp_path / "config", config)))
