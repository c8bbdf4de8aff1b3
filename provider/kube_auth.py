"""How the provider reaches the Kubernetes API: in-cluster service account, or a kubeconfig file.

In-cluster: $KUBERNETES_SERVICE_HOST/$KUBERNETES_SERVICE_PORT, the token and CA under
/var/run/secrets/kubernetes.io/serviceaccount. The token file is re-read every minute (bound
service account tokens rotate). Kubeconfig: the current context's server, certificate-authority
(-data), and token / tokenFile / client-certificate(-data) + client-key(-data).
"""

from __future__ import annotations

import base64
import os
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from kubeflow_trainer_policy_provider.errors import InputError
from kubeflow_trainer_policy_provider.reader import read_single

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS = 60.0


class KubeAuthError(ValueError):
    """The credentials could not be found or read."""


@dataclass
class KubeCredentials:
    server: str
    ca_file: str | None = None
    token: str | None = None
    token_file: str | None = None
    client_cert: tuple[str, str] | None = None
    _token_read_at: float = field(default=0.0, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def bearer_token(self) -> str | None:
        if self.token_file:
            with self._lock:
                if time.monotonic() - self._token_read_at > TOKEN_REREAD_SECONDS or not self.token:
                    self.token = Path(self.token_file).read_text().strip()
                    self._token_read_at = time.monotonic()
        return self.token

    def session(self) -> requests.Session:
        """A session that trusts only the cluster CA and ignores proxies/REQUESTS_CA_BUNDLE."""
        session = requests.Session()
        session.trust_env = False
        session.verify = self.ca_file if self.ca_file else True
        if self.client_cert:
            session.cert = self.client_cert
        session.headers["Accept"] = "application/json"
        return session

    def headers(self) -> dict[str, str]:
        token = self.bearer_token()
        return {"Authorization": f"Bearer {token}"} if token else {}


def in_cluster(sa_dir: Path = SERVICE_ACCOUNT_DIR) -> KubeCredentials:
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeAuthError("not in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set")
    token_file, ca_file = sa_dir / "token", sa_dir / "ca.crt"
    if not token_file.exists() or not ca_file.exists():
        raise KubeAuthError(f"service account token or CA missing under {sa_dir}")
    host = f"[{host}]" if ":" in host else host
    return KubeCredentials(server=f"https://{host}:{port}", ca_file=str(ca_file), token_file=str(token_file))


def _data_file(data_b64: str, suffix: str) -> str:
    handle = tempfile.NamedTemporaryFile(prefix="trainer-policy-", suffix=suffix, delete=False)  # noqa: SIM115
    with handle:
        handle.write(base64.b64decode(data_b64))
    os.chmod(handle.name, 0o600)
    return handle.name


def _named(entries: Any, name: str, what: str) -> dict[str, Any]:
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry.get(what) or {}
    raise KubeAuthError(f"kubeconfig has no {what} named {name!r}")


def _path(base: Path, value: str) -> str:
    return str(value if os.path.isabs(value) else base / value)


def from_kubeconfig(path: str | Path, context: str | None = None) -> KubeCredentials:
    path = Path(path)
    try:
        config = read_single(path).body
    except InputError as exc:
        raise KubeAuthError(f"cannot read kubeconfig {exc}") from exc
    if not isinstance(config, dict):
        raise KubeAuthError(f"kubeconfig {path} is not a mapping")
    context_name = context or config.get("current-context")
    if not context_name:
        raise KubeAuthError(f"kubeconfig {path} has no current-context")
    ctx = _named(config.get("contexts"), context_name, "context")
    cluster = _named(config.get("clusters"), ctx.get("cluster", ""), "cluster")
    user = _named(config.get("users"), ctx.get("user", ""), "user") if ctx.get("user") else {}
    base = path.parent
    if not cluster.get("server"):
        raise KubeAuthError(f"cluster {ctx.get('cluster')!r} has no server")
    creds = KubeCredentials(server=str(cluster["server"]).rstrip("/"))
    if cluster.get("certificate-authority-data"):
        creds.ca_file = _data_file(cluster["certificate-authority-data"], ".crt")
    elif cluster.get("certificate-authority"):
        creds.ca_file = _path(base, cluster["certificate-authority"])
    if user.get("token"):
        creds.token = str(user["token"])
    elif user.get("tokenFile"):
        creds.token_file = _path(base, user["tokenFile"])
    cert = user.get("client-certificate") and _path(base, user["client-certificate"])
    key = user.get("client-key") and _path(base, user["client-key"])
    if user.get("client-certificate-data"):
        cert = _data_file(user["client-certificate-data"], ".crt")
    if user.get("client-key-data"):
        key = _data_file(user["client-key-data"], ".key")
    if cert and key:
        creds.client_cert = (cert, key)
    return creds
