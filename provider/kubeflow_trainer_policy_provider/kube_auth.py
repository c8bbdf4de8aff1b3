"""How the provider reaches the Kubernetes API: a kubeconfig or the in-cluster service account.

Which one (controller-runtime's order): `--kubeconfig FILE`; else `$KUBECONFIG` (a `:`-separated list,
merged as kubectl merges it: the first file that sets a value or names an entry wins); else the in-cluster
service account ($KUBERNETES_SERVICE_HOST/PORT, the token and CA under
/var/run/secrets/kubernetes.io/serviceaccount, the token re-read every minute since bound tokens rotate);
else ~/.kube/config.

From a kubeconfig: the context's cluster `server`, `certificate-authority(-data)`, and the user's `token`,
`tokenFile`, `client-certificate(-data)` + `client-key(-data)`, or an `exec` credential plugin
(client.authentication.k8s.io v1 or v1beta1, as EKS, GKE and AKS kubeconfigs use: run with its `args` and
`env` and $KUBERNETES_EXEC_INFO, never interactively; its token is cached until 10 s before its
`expirationTimestamp` and fetched again after a 401; a client certificate it returns is read once, at start).

What it cannot do, refused at start with a one-line error rather than connecting without credentials:
`auth-provider` (the legacy gcp/azure/oidc plugins, removed from kubectl in 1.26: use their exec plugins),
`username`/`password`, impersonation (`as`, `as-groups`, `as-uid`), `proxy-url`,
`insecure-skip-tls-verify`, `tls-server-name`, and an `exec` plugin whose `interactiveMode` is `Always`.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import os
import re
import selectors
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from kubeflow_trainer_policy_provider.errors import InputError
from kubeflow_trainer_policy_provider.reader import read_documents

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS = 60.0
EXEC_TIMEOUT_SECONDS = 30.0
EXEC_MAX_OUTPUT_BYTES = 1 << 20
"""An ExecCredential is a token or a certificate and key: kilobytes. More is a broken plugin."""
EXEC_STDERR_KEPT_BYTES = 4096
EXEC_EXPIRY_MARGIN_SECONDS = 10.0
EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
UNSUPPORTED_USER_FIELDS = ("auth-provider", "username", "password", "as", "as-groups", "as-uid", "as-user-extra")
UNSUPPORTED_CLUSTER_FIELDS = ("proxy-url", "tls-server-name")


class KubeAuthError(ValueError):
    """The credentials could not be found, read or obtained."""


@dataclass
class ExecPlugin:
    """A client-go exec credential plugin: runs `command` for an ExecCredential."""

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    api_version: str = EXEC_API_VERSIONS[0]
    install_hint: str = ""
    cluster_info: dict[str, Any] | None = None
    """Sent in $KUBERNETES_EXEC_INFO when the kubeconfig sets provideClusterInfo."""

    def run(self) -> dict[str, Any]:
        """The ExecCredential's status ({token} or {clientCertificateData, clientKeyData}, expirationTimestamp).

        Every failure is a KubeAuthError naming the plugin (never the token): not found, a timeout, too much
        output, an exit code, output that is not an ExecCredential."""
        spec: dict[str, Any] = {"interactive": False}
        if self.cluster_info is not None:
            spec["cluster"] = self.cluster_info
        info = {"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec}
        env = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": json.dumps(info)}
        name = f"exec credential plugin {self.command!r}"
        returncode, stdout, stderr = self._spawn(name, env)
        if returncode != 0:
            tail = " ".join(stderr.decode(errors="replace").split())[-300:]
            raise KubeAuthError(f"{name} exited {returncode}: {tail}")
        try:
            credential = json.loads(stdout)
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise KubeAuthError(f"{name} printed no JSON ExecCredential") from exc
        if not isinstance(credential, dict):
            credential = {}
        status = credential.get("status")
        if credential.get("kind") != "ExecCredential" or not isinstance(status, dict):
            raise KubeAuthError(f"{name} printed no ExecCredential with a status")
        token = status.get("token")
        if token is not None and not isinstance(token, str):
            raise KubeAuthError(f"{name} returned a status.token that is not a string")
        if token:
            status = {**status, "token": checked_token(token, name)}
        elif not (
            isinstance(status.get("clientCertificateData"), str) and isinstance(status.get("clientKeyData"), str)
        ):
            raise KubeAuthError(f"{name} returned neither a token nor a certificate")
        return status

    def _spawn(self, name: str, env: dict[str, str]) -> tuple[int, bytes, bytes]:
        """Run the plugin in its own process group; kill the whole group when it takes too long or prints too
        much (a plugin's helpers must not outlive it, nor its output fill the provider's memory)."""
        try:
            proc = subprocess.Popen(
                [self.command, *self.args],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            hint = f" ({self.install_hint.strip()})" if self.install_hint else ""
            raise KubeAuthError(f"{name} not found{hint}") from exc
        except (OSError, ValueError) as exc:
            raise KubeAuthError(f"{name} could not be started: {type(exc).__name__}: {exc}") from exc
        deadline = time.monotonic() + EXEC_TIMEOUT_SECONDS
        stdout, stderr = bytearray(), bytearray()
        problem = ""
        try:
            with selectors.DefaultSelector() as selector:
                assert proc.stdout is not None and proc.stderr is not None
                selector.register(proc.stdout, selectors.EVENT_READ, stdout)
                selector.register(proc.stderr, selectors.EVENT_READ, stderr)
                while selector.get_map() and not problem:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        problem = f"did not finish within {EXEC_TIMEOUT_SECONDS:g}s"
                        break
                    for key, _ in selector.select(left):
                        chunk = os.read(key.fd, 65536)
                        if not chunk:
                            selector.unregister(key.fileobj)
                            continue
                        buffer: bytearray = key.data
                        buffer += chunk
                        if buffer is stdout and len(stdout) > EXEC_MAX_OUTPUT_BYTES:
                            problem = f"printed more than {EXEC_MAX_OUTPUT_BYTES} bytes"
                        elif buffer is stderr and len(stderr) > EXEC_MAX_OUTPUT_BYTES:
                            del stderr[: len(stderr) - EXEC_STDERR_KEPT_BYTES]  # keep the tail only
            if not problem:
                try:
                    proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    problem = f"did not finish within {EXEC_TIMEOUT_SECONDS:g}s"
        finally:
            if problem or proc.returncode is None:
                _kill_group(proc)
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        if problem:
            raise KubeAuthError(f"{name} {problem}; its process group was killed")
        return proc.returncode, bytes(stdout), bytes(stderr)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(5)


_TOKEN_CHARS = re.compile(r"[\x21-\x7e]+")


def checked_token(token: str, where: str) -> str:
    """A bearer token as an HTTP header carries it: surrounding whitespace dropped, anything but visible ASCII
    refused (a CR/LF would otherwise end up in error messages and logs; the token is never quoted)."""
    stripped = token.strip()
    if not _TOKEN_CHARS.fullmatch(stripped):
        raise KubeAuthError(f"{where} returned a token with whitespace, control or non-ASCII characters in it")
    return stripped


def _expiry(status: Mapping[str, Any]) -> float:
    """Monotonic time after which an exec credential must be fetched again (inf: until a 401)."""
    stamp = status.get("expirationTimestamp")
    if not stamp:
        return float("inf")
    try:
        when = datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError as exc:
        raise KubeAuthError(f"exec credential expirationTimestamp {stamp!r} is not RFC 3339") from exc
    left = when.timestamp() - time.time() - EXEC_EXPIRY_MARGIN_SECONDS
    return time.monotonic() + max(left, 0.0)


@dataclass
class KubeCredentials:
    server: str
    ca_file: str | None = None
    token: str | None = None
    token_file: str | None = None
    client_cert: tuple[str, str] | None = None
    exec_plugin: ExecPlugin | None = None
    _token_read_at: float = field(default=0.0, repr=False)
    _token_expires: float = field(default=0.0, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def start(self) -> None:
        """Fetch an exec plugin's credential once, so that a broken plugin stops the command at start."""
        if self.exec_plugin is not None:
            with self._lock:
                self._exec_refresh()

    def _exec_refresh(self) -> None:
        assert self.exec_plugin is not None
        status = self.exec_plugin.run()
        if status.get("token"):
            self.token = str(status["token"])
        elif self.client_cert is None:
            cert = _data_file(str(status["clientCertificateData"]).encode(), ".crt", encoded=False)
            key = _data_file(str(status["clientKeyData"]).encode(), ".key", encoded=False)
            self.client_cert = (cert, key)
        self._token_expires = _expiry(status)

    def bearer_token(self) -> str | None:
        if self.exec_plugin is not None:
            with self._lock:
                if time.monotonic() >= self._token_expires:
                    self._exec_refresh()
            return self.token
        if self.token_file:
            with self._lock:
                if time.monotonic() - self._token_read_at > TOKEN_REREAD_SECONDS or not self.token:
                    self.token = checked_token(Path(self.token_file).read_text(), f"token file {self.token_file}")
                    self._token_read_at = time.monotonic()
        return self.token

    def unauthorized(self) -> None:
        """The API answered 401: an exec credential is fetched again before the next call (client-go does too)."""
        if self.exec_plugin is not None:
            with self._lock:
                self._token_expires = 0.0

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


def _data_file(data: bytes, suffix: str, *, encoded: bool = True) -> str:
    handle = tempfile.NamedTemporaryFile(prefix="trainer-policy-", suffix=suffix, delete=False)  # noqa: SIM115
    with handle:
        handle.write(base64.b64decode(data) if encoded else data)
    os.chmod(handle.name, 0o600)
    return handle.name


def _named(entries: Any, name: str, what: str) -> dict[str, Any]:
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry.get(what) or {}
    raise KubeAuthError(f"kubeconfig has no {what} named {name!r}")


def _path(base: Path, value: str) -> str:
    return str(value if os.path.isabs(value) else base / value)


@dataclass
class _Merged:
    """Kubeconfig files merged as kubectl merges $KUBECONFIG: first file wins per value and per named entry."""

    current_context: str | None = None
    entries: dict[str, dict[str, tuple[dict[str, Any], Path]]] = field(
        default_factory=lambda: {"contexts": {}, "clusters": {}, "users": {}}
    )

    def add(self, path: Path) -> None:
        try:  # the bounded reader: a kubeconfig is YAML from the user, with its limits and duplicate-key check
            documents = read_documents(path)
        except InputError as exc:
            raise KubeAuthError(f"cannot read kubeconfig {exc}") from exc
        if not documents:
            return
        if len(documents) > 1:
            raise KubeAuthError(f"cannot read kubeconfig {path}: expected one document, found {len(documents)}")
        config = documents[0].body
        if not isinstance(config, dict):
            raise KubeAuthError(f"kubeconfig {path} is not a mapping")
        self.current_context = self.current_context or config.get("current-context") or None
        for kind, named in self.entries.items():
            for entry in config.get(kind) or []:
                if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                    named.setdefault(entry["name"], (entry, path.parent))

    def get(self, kind: str, name: str, what: str) -> tuple[dict[str, Any], Path]:
        found = self.entries[kind].get(name)
        if found is None:
            raise KubeAuthError(f"kubeconfig has no {what} named {name!r}")
        entry, base = found
        return entry.get(what) or {}, base


def from_kubeconfig(path: str | Path | Sequence[str | Path], context: str | None = None) -> KubeCredentials:
    """Credentials from one kubeconfig file, or several merged (the files of $KUBECONFIG, in order)."""
    paths = [Path(path)] if isinstance(path, str | Path) else [Path(p) for p in path]
    merged = _Merged()
    for file in paths:
        if len(paths) > 1 and not file.exists():  # kubectl skips missing files of $KUBECONFIG
            continue
        merged.add(file)
    shown = os.pathsep.join(map(str, paths))
    context_name = context or merged.current_context
    if not context_name:
        raise KubeAuthError(f"kubeconfig {shown} has no current-context")
    ctx, _ = merged.get("contexts", context_name, "context")
    cluster, cluster_base = merged.get("clusters", str(ctx.get("cluster", "")), "cluster")
    user, user_base = merged.get("users", str(ctx.get("user", "")), "user") if ctx.get("user") else ({}, Path())
    return _credentials(cluster, cluster_base, user, user_base, str(ctx.get("cluster")))


def _credentials(
    cluster: dict[str, Any], cluster_base: Path, user: dict[str, Any], user_base: Path, cluster_name: str
) -> KubeCredentials:
    if not cluster.get("server"):
        raise KubeAuthError(f"cluster {cluster_name!r} has no server")
    unsupported = [f"cluster.{f}" for f in UNSUPPORTED_CLUSTER_FIELDS if cluster.get(f)]
    unsupported += [f"user.{f}" for f in UNSUPPORTED_USER_FIELDS if user.get(f)]
    if cluster.get("insecure-skip-tls-verify"):
        unsupported.append("cluster.insecure-skip-tls-verify")
    if unsupported:
        raise KubeAuthError(
            f"kubeconfig uses {', '.join(unsupported)}, which the provider does not support (token, tokenFile, "
            "client certificates and exec plugins are)"
        )
    creds = KubeCredentials(server=str(cluster["server"]).rstrip("/"))
    if cluster.get("certificate-authority-data"):
        creds.ca_file = _data_file(str(cluster["certificate-authority-data"]).encode(), ".crt")
    elif cluster.get("certificate-authority"):
        creds.ca_file = _path(cluster_base, cluster["certificate-authority"])
    if user.get("token"):
        creds.token = checked_token(str(user["token"]), "kubeconfig user.token")
    elif user.get("tokenFile"):
        creds.token_file = _path(user_base, user["tokenFile"])
    cert = user.get("client-certificate") and _path(user_base, user["client-certificate"])
    key = user.get("client-key") and _path(user_base, user["client-key"])
    if user.get("client-certificate-data"):
        cert = _data_file(str(user["client-certificate-data"]).encode(), ".crt")
    if user.get("client-key-data"):
        key = _data_file(str(user["client-key-data"]).encode(), ".key")
    if cert and key:
        creds.client_cert = (cert, key)
    if user.get("exec"):
        creds.exec_plugin = _exec_plugin(user["exec"], user_base, cluster)
    return creds


def _exec_plugin(spec: Any, base: Path, cluster: dict[str, Any]) -> ExecPlugin:
    if not isinstance(spec, dict) or not isinstance(spec.get("command"), str) or not spec["command"]:
        raise KubeAuthError("kubeconfig user.exec needs a command")
    api_version = spec.get("apiVersion") or EXEC_API_VERSIONS[0]
    if api_version not in EXEC_API_VERSIONS:
        raise KubeAuthError(
            f"exec plugin apiVersion {api_version!r} is not supported (want one of {EXEC_API_VERSIONS})"
        )
    if spec.get("interactiveMode") == "Always":
        raise KubeAuthError("exec plugin with interactiveMode Always: the provider has no terminal")
    command = spec["command"]
    if os.sep in command and not os.path.isabs(command):  # kubectl: relative to the kubeconfig's folder
        command = str(base / command)
    env = {str(e["name"]): str(e.get("value", "")) for e in spec.get("env") or [] if isinstance(e, dict)}
    info = None
    if spec.get("provideClusterInfo"):
        info = {"server": cluster.get("server")}
        if cluster.get("certificate-authority-data"):
            info["certificate-authority-data"] = cluster["certificate-authority-data"]
    return ExecPlugin(
        command=command,
        args=[str(a) for a in spec.get("args") or []],
        env=env,
        api_version=api_version,
        install_hint=str(spec.get("installHint") or ""),
        cluster_info=info,
    )


DEFAULT_KUBECONFIG = Path("~/.kube/config")


def default_credentials(kubeconfig: str | None = None, context: str | None = None) -> tuple[KubeCredentials, str]:
    """Credentials in controller-runtime's order (--kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config),
    and where they came from."""
    if kubeconfig:
        return from_kubeconfig(kubeconfig, context), kubeconfig
    env = os.environ.get("KUBECONFIG")
    if env:
        files = [p for p in env.split(os.pathsep) if p]
        return from_kubeconfig(files, context), f"$KUBECONFIG={env}"
    if os.environ.get("KUBERNETES_SERVICE_HOST") and context is None:
        return in_cluster(), "in-cluster"
    home = DEFAULT_KUBECONFIG.expanduser()
    if home.is_file():
        return from_kubeconfig(home, context), str(home)
    raise KubeAuthError("no credentials: no --kubeconfig, no $KUBECONFIG, not in a cluster, no ~/.kube/config")
