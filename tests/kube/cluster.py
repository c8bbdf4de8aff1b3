"""A real kube-apiserver + etcd on 127.0.0.1 for tests.

The binaries come from ``scripts/ensure-kube-apiserver.sh`` (Kubernetes 1.20 built from Debian
sources, etcd from Debian) unless the environment names them in ``KUBE_APISERVER`` and ``ETCD``.
Authentication is a static token in the ``system:masters`` group; the server certificate is
signed by a CA made here with ``cryptography``. Kubernetes 1.20 has no CEL and no
ValidatingAdmissionPolicy, but it does call validating webhooks.

``Binaries.pinned()`` takes instead the kube-apiserver that tools/versions.json pins (1.34, built by
``python -m kubeflow_trainer_policy.pinned.live`` from tools/kube-apiserver) with the same etcd: the live
Gatekeeper tests (tests/kube/test_gatekeeper_live.py) run on it. The session's ``kube_cluster`` stays on 1.20 for
now: the suites that use it have not been run on 1.34 yet.

Only the apiserver and etcd run: there is no controller-manager, so a deleted namespace stays
``Terminating`` forever and nothing garbage-collects owned objects. Use fresh namespace names.

Usage::

    with KubeCluster.start() as cluster:
        cluster.create_namespace("team-a")
        cluster.apply_jobset("team-a", "js", replicated_jobs=[{"name": "node", "replicas": 1}])
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import dataclasses
import datetime
import ipaddress
import json as jsonlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import requests
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.support import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
ENSURE_SCRIPT = REPO_ROOT / "scripts" / "ensure-kube-apiserver.sh"
CRD_DIR = Path(__file__).resolve().parent / "crds"

JOBSET_API = "jobset.x-k8s.io/v1alpha2"
TRAINER_API = "trainer.kubeflow.org/v1alpha1"

# kind -> (plural, namespaced) for the kinds the tests use; anything else must be given explicitly.
KINDS: dict[str, tuple[str, bool]] = {
    "JobSet": ("jobsets", True),
    "TrainJob": ("trainjobs", True),
    "TrainingRuntime": ("trainingruntimes", True),
    "ClusterTrainingRuntime": ("clustertrainingruntimes", False),
    "Namespace": ("namespaces", False),
    "ConfigMap": ("configmaps", True),
    "Secret": ("secrets", True),
    "ValidatingWebhookConfiguration": ("validatingwebhookconfigurations", False),
    "CustomResourceDefinition": ("customresourcedefinitions", False),
}

STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


class KubeClusterError(RuntimeError):
    """The cluster could not be provisioned, started or queried."""


class KubeApiError(KubeClusterError):
    """The API server answered a request with an unexpected status."""

    def __init__(self, method: str, path: str, response: requests.Response) -> None:
        self.status_code = response.status_code
        self.body = response.text
        super().__init__(f"{method} {path} -> HTTP {response.status_code}: {response.text[:2000]}")


@dataclass(frozen=True)
class Binaries:
    kube_apiserver: Path
    etcd: Path
    legacy: bool = True
    """Kubernetes 1.20 (the Debian build): it takes --insecure-port, which 1.24 removed."""

    @classmethod
    def pinned(cls) -> Binaries:
        """The pinned kube-apiserver of tools/versions.json (built by the installer), with the ensure script's etcd
        (Debian's 3.4.23, which kube-apiserver 1.34 runs on)."""
        from kubeflow_trainer_policy.pinned.install import install
        from kubeflow_trainer_policy.pinned.versions import pins

        tool = pins().kube_apiserver
        if tool is None:
            raise KubeClusterError("tools/versions.json pins no kubernetes")
        return cls(install(tool), cls.resolve().etcd, legacy=False)

    @classmethod
    def resolve(cls) -> Binaries:
        """Take the binaries from $KUBE_APISERVER/$ETCD, else run the ensure script."""
        apiserver = os.environ.get("KUBE_APISERVER")
        etcd = os.environ.get("ETCD")
        if apiserver and etcd:
            return cls(Path(apiserver), Path(etcd))
        proc = subprocess.run(
            ["bash", str(ENSURE_SCRIPT)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-20:])
            raise KubeClusterError(f"{ENSURE_SCRIPT.name} failed (exit {proc.returncode}):\n{tail}")
        found: dict[str, str] = {}
        for line in proc.stdout.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                found[key.strip()] = value.strip()
        try:
            return cls(Path(found["KUBE_APISERVER"]), Path(found["ETCD"]))
        except KeyError as exc:
            raise KubeClusterError(f"{ENSURE_SCRIPT.name} printed no {exc.args[0]}=: {proc.stdout!r}") from exc


def _die_with_parent() -> None:
    """preexec_fn: SIGKILL the child if the test process dies without cleaning up (Linux)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            pr_set_pdeathsig = 1
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


@dataclass
class _Process:
    name: str
    argv: list[str]
    log_path: Path
    popen: subprocess.Popen[bytes] | None = None
    env: dict[str, str] | None = None
    """The child's environment (None: this process's)."""

    def start(self) -> None:
        with self.log_path.open("ab") as log:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,  # own process group: stop() kills the whole group
                preexec_fn=_die_with_parent,
            )

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self) -> None:
        popen, self.popen = self.popen, None
        if popen is None:
            return
        for sig, wait_s in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, STOP_TIMEOUT_S)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, sig)
            try:
                popen.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        # the leader is gone; make sure nothing else in its group survives
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, signal.SIGKILL)

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    # SEC1 ("EC PRIVATE KEY"): the form Kubernetes 1.20's key loaders all accept
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def make_certs(directory: Path) -> dict[str, Path]:
    """A CA, a serving certificate for 127.0.0.1/localhost and a service-account signing key."""
    now = datetime.datetime.now(datetime.UTC)
    not_before, not_after = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=2)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("kubeflow-trainer-policy-test-ca"))
        .issuer_name(_name("kubeflow-trainer-policy-test-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver"))
        .issuer_name(ca_cert.subject)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.IPAddress(ipaddress.IPv4Address("127.0.0.1")),
                    x509.DNSName("localhost"),
                    x509.DNSName("kubernetes.default.svc"),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    paths = {
        "ca_cert": directory / "ca.crt",
        "ca_key": directory / "ca.key",
        "server_cert": directory / "apiserver.crt",
        "server_key": directory / "apiserver.key",
        "sa_key": directory / "sa.key",
        "sa_pub": directory / "sa.pub",
    }
    paths["ca_cert"].write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(paths["ca_key"], ca_key)
    paths["server_cert"].write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    _write_key(paths["server_key"], server_key)
    sa_key = ec.generate_private_key(ec.SECP256R1())
    _write_key(paths["sa_key"], sa_key)
    paths["sa_pub"].write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return paths


@dataclass
class KubeCluster:
    """A running etcd + kube-apiserver pair in a private temporary directory."""

    binaries: Binaries
    workdir: Path
    apiserver_port: int
    etcd_client_port: int
    etcd_peer_port: int
    token: str
    ca_file: Path
    kubeconfig: Path
    _etcd: _Process
    _apiserver: _Process
    _session: requests.Session = field(repr=False)
    _owns_workdir: bool = True
    timings: dict[str, float] = field(default_factory=dict)

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def start(
        cls,
        binaries: Binaries | None = None,
        *,
        workdir: Path | None = None,
        crd_dir: Path | None = CRD_DIR,
    ) -> KubeCluster:
        """Provision binaries, start etcd and kube-apiserver, wait for /readyz, install CRDs."""
        t0 = time.monotonic()
        binaries = binaries or Binaries.resolve()
        t_binaries = time.monotonic() - t0
        owns = workdir is None
        work = Path(tempfile.mkdtemp(prefix="ktp-kube-")) if workdir is None else workdir
        work.mkdir(parents=True, exist_ok=True)
        try:
            cluster = cls._create(binaries, work, owns)
        except BaseException:
            if owns:
                shutil.rmtree(work, ignore_errors=True)
            raise
        cluster.timings["binaries_s"] = t_binaries
        try:
            cluster._start_processes()
            if crd_dir is not None:
                t = time.monotonic()
                cluster.install_crds(crd_dir)
                cluster.timings["crds_s"] = time.monotonic() - t
        except BaseException:
            cluster.stop()
            raise
        cluster.timings["start_total_s"] = time.monotonic() - t0
        return cluster

    @classmethod
    def _create(cls, binaries: Binaries, work: Path, owns: bool) -> KubeCluster:
        certs = make_certs(work)
        token = secrets.token_hex(24)
        token_file = work / "tokens.csv"
        token_file.write_text(f'{token},admin,admin-uid,"system:masters"\n')
        token_file.chmod(0o600)
        apiserver_port = free_port()
        etcd_client_port = free_port()
        etcd_peer_port = free_port()
        while etcd_peer_port in (apiserver_port, etcd_client_port):
            etcd_peer_port = free_port()

        etcd_url = f"http://127.0.0.1:{etcd_client_port}"
        peer_url = f"http://127.0.0.1:{etcd_peer_port}"
        etcd = _Process(
            "etcd",
            [
                str(binaries.etcd),
                "--name=ktp",
                f"--data-dir={work / 'etcd-data'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=ktp={peer_url}",
                "--initial-cluster-state=new",
                "--logger=zap",
                "--log-level=warn",
            ],
            work / "etcd.log",
        )
        url = f"https://127.0.0.1:{apiserver_port}"
        apiserver = _Process(
            "kube-apiserver",
            [
                str(binaries.kube_apiserver),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={apiserver_port}",
                *(["--insecure-port=0"] if binaries.legacy else []),  # 1.20 would otherwise listen on :8080
                f"--cert-dir={work / 'apiserver-certs'}",
                f"--tls-cert-file={certs['server_cert']}",
                f"--tls-private-key-file={certs['server_key']}",
                "--tls-min-version=VersionTLS13",
                f"--client-ca-file={certs['ca_cert']}",
                f"--token-auth-file={token_file}",
                "--authorization-mode=RBAC",
                f"--service-account-key-file={certs['sa_pub']}",
                f"--service-account-signing-key-file={certs['sa_key']}",
                "--service-account-issuer=https://kubernetes.default.svc",
                "--api-audiences=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.96.0.0/24",
                "--endpoint-reconciler-type=none",
                "--profiling=false",
                *(["--logtostderr=true"] if binaries.legacy else []),  # removed in 1.26; stderr is the default
                "--v=1",
            ],
            work / "apiserver.log",
        )
        kubeconfig = work / "kubeconfig"
        kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {
                            "name": "ktp",
                            "cluster": {"server": url, "certificate-authority": str(certs["ca_cert"])},
                        }
                    ],
                    "users": [{"name": "admin", "user": {"token": token}}],
                    "contexts": [{"name": "ktp", "context": {"cluster": "ktp", "user": "admin"}}],
                    "current-context": "ktp",
                },
                sort_keys=False,
            )
        )
        kubeconfig.chmod(0o600)
        session = requests.Session()
        session.trust_env = False  # ignore REQUESTS_CA_BUNDLE, proxies and ~/.netrc
        session.verify = str(certs["ca_cert"])
        session.headers["Authorization"] = f"Bearer {token}"
        cluster = cls(
            binaries=binaries,
            workdir=work,
            apiserver_port=apiserver_port,
            etcd_client_port=etcd_client_port,
            etcd_peer_port=etcd_peer_port,
            token=token,
            ca_file=certs["ca_cert"],
            kubeconfig=kubeconfig,
            _etcd=etcd,
            _apiserver=apiserver,
            _session=session,
            _owns_workdir=owns,
        )
        atexit.register(cluster.stop)
        return cluster

    def _start_processes(self) -> None:
        t = time.monotonic()
        self._etcd.start()
        self._wait(self._etcd, self._etcd_healthy, "etcd /health")
        self.timings["etcd_ready_s"] = time.monotonic() - t
        t = time.monotonic()
        self._start_apiserver()
        self.timings["apiserver_ready_s"] = time.monotonic() - t

    def _start_apiserver(self) -> None:
        self._apiserver.start()
        self._wait(self._apiserver, self._apiserver_ready, "kube-apiserver /readyz")

    def _wait(self, proc: _Process, probe: Any, what: str) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if not proc.alive():
                raise KubeClusterError(f"{proc.name} exited during startup; log tail:\n{proc.log_tail()}")
            if probe():
                return
            time.sleep(0.2)
        raise KubeClusterError(f"timed out after {STARTUP_TIMEOUT_S:.0f} s waiting for {what}:\n{proc.log_tail()}")

    def _etcd_healthy(self) -> bool:
        try:
            resp = requests.get(f"http://127.0.0.1:{self.etcd_client_port}/health", timeout=2, proxies={})
        except requests.RequestException:
            return False
        return resp.status_code == 200 and '"health":"true"' in resp.text.replace(" ", "")

    def _apiserver_ready(self) -> bool:
        try:
            resp = self._session.get(f"{self.url}/readyz", timeout=2)
        except requests.RequestException:
            return False
        return resp.status_code == 200

    def restart_apiserver(self) -> float:
        """Stop and start the kube-apiserver only (same port, same etcd); returns seconds taken."""
        t = time.monotonic()
        self._apiserver.stop()
        self._start_apiserver()
        elapsed = time.monotonic() - t
        self.timings["last_restart_s"] = elapsed
        return elapsed

    @contextlib.contextmanager
    def frozen_apiserver(self) -> Iterator[None]:
        """SIGSTOP the kube-apiserver (its sockets stay open, nothing answers: a half-open server) until the
        block ends, then SIGCONT."""
        popen = self._apiserver.popen
        if popen is None:
            raise KubeClusterError("kube-apiserver is not running")
        os.kill(popen.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(popen.pid, signal.SIGCONT)

    @contextlib.contextmanager
    def second_apiserver(self) -> Iterator[KubeCluster]:
        """Another kube-apiserver on the same etcd (another port, same certificates and token), as a view of
        this cluster whose API helpers (`apply_jobset`, `set_jobset_status`, ...) go through it."""
        port = free_port()
        argv = [
            f"--secure-port={port}"
            if arg.startswith("--secure-port=")
            else f"--cert-dir={self.workdir / 'apiserver2-certs'}"
            if arg.startswith("--cert-dir=")
            else arg
            for arg in self._apiserver.argv
        ]
        process = _Process("kube-apiserver-2", argv, self.workdir / "apiserver2.log")
        view = dataclasses.replace(self, apiserver_port=port, _apiserver=process)
        process.start()
        try:
            view._wait(process, view._apiserver_ready, "second kube-apiserver /readyz")
            yield view
        finally:
            process.stop()

    def stop(self) -> None:
        """Kill both process groups and remove the work directory (idempotent)."""
        self._apiserver.stop()
        self._etcd.stop()
        self._session.close()
        if self._owns_workdir and os.environ.get("KTP_KEEP_KUBE_WORKDIR") != "1":
            shutil.rmtree(self.workdir, ignore_errors=True)
        atexit.unregister(self.stop)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    @property
    def apiserver_log(self) -> Path:
        return self._apiserver.log_path

    @property
    def etcd_log(self) -> Path:
        return self._etcd.log_path

    # ------------------------------------------------------------------- raw API
    def api(
        self,
        method: str,
        path: str,
        json: Any = None,
        *,
        content_type: str | None = None,
        params: Mapping[str, str] | None = None,
        timeout: float = 30.0,
    ) -> requests.Response:
        """One request to the API server as the admin (TLS verified against the cluster CA)."""
        headers = {"Accept": "application/json"}
        data: bytes | None = None
        if json is not None:
            headers["Content-Type"] = content_type or "application/json"
            data = jsonlib.dumps(json).encode()
        return self._session.request(
            method.upper(),
            f"{self.url}{path}",
            data=data,
            headers=headers,
            params=params,
            timeout=timeout,
        )

    def api_ok(self, method: str, path: str, json: Any = None, **kwargs: Any) -> dict[str, Any]:
        """Like api() but raises KubeApiError unless 2xx, and returns the decoded body."""
        resp = self.api(method, path, json, **kwargs)
        if not resp.ok:
            raise KubeApiError(method, path, resp)
        return resp.json() if resp.content else {}

    # ----------------------------------------------------------------- resources
    @staticmethod
    def resource_path(
        api_version: str,
        kind: str,
        namespace: str | None = None,
        name: str | None = None,
        *,
        plural: str | None = None,
    ) -> str:
        """REST path of a collection or object; ``plural`` is needed for kinds not in KINDS."""
        if plural is None:
            if kind not in KINDS:
                raise KubeClusterError(f"unknown kind {kind!r}: pass plural=")
            plural = KINDS[kind][0]
        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        ns = f"/namespaces/{namespace}" if namespace else ""
        return f"{base}{ns}/{plural}" + (f"/{name}" if name else "")

    def _object_path(self, obj: Mapping[str, Any], *, with_name: bool) -> str:
        meta = obj.get("metadata", {})
        return self.resource_path(
            obj["apiVersion"],
            obj["kind"],
            meta.get("namespace"),
            meta["name"] if with_name else None,
        )

    def apply(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Create the object, or replace it (keeping its status) if it exists."""
        item_path = self._object_path(obj, with_name=True)
        current = self.api("GET", item_path)
        if current.status_code == 404:
            return self.api_ok("POST", self._object_path(obj, with_name=False), obj)
        if not current.ok:
            raise KubeApiError("GET", item_path, current)
        body = jsonlib.loads(jsonlib.dumps(obj))
        body.setdefault("metadata", {})["resourceVersion"] = current.json()["metadata"]["resourceVersion"]
        return self.api_ok("PUT", item_path, body)

    def get(self, api_version: str, kind: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        resp = self.api("GET", self.resource_path(api_version, kind, namespace, name))
        if resp.status_code == 404:
            return None
        if not resp.ok:
            raise KubeApiError("GET", resp.request.path_url, resp)
        return resp.json()

    def delete(self, api_version: str, kind: str, namespace: str | None, name: str) -> bool:
        """Delete the object; False if it did not exist."""
        path = self.resource_path(api_version, kind, namespace, name)
        resp = self.api("DELETE", path)
        if resp.status_code == 404:
            return False
        if not resp.ok:
            raise KubeApiError("DELETE", path, resp)
        return True

    def create_namespace(self, name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Create a namespace (no error if it already exists)."""
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}}
        resp = self.api("POST", "/api/v1/namespaces", body)
        if resp.status_code == 409:
            return self.api_ok("GET", f"/api/v1/namespaces/{name}")
        if not resp.ok:
            raise KubeApiError("POST", "/api/v1/namespaces", resp)
        return resp.json()

    def apply_jobset(
        self,
        namespace: str,
        name: str,
        replicated_jobs: Sequence[Mapping[str, Any]] = (),
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        owner_references: Sequence[Mapping[str, Any]] | None = None,
        spec: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Create or replace a JobSet; ``spec`` adds fields besides ``replicatedJobs``."""
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if labels:
            metadata["labels"] = dict(labels)
        if annotations:
            metadata["annotations"] = dict(annotations)
        if owner_references:
            metadata["ownerReferences"] = [dict(ref) for ref in owner_references]
        body = {
            "apiVersion": JOBSET_API,
            "kind": "JobSet",
            "metadata": metadata,
            "spec": {**(spec or {}), "replicatedJobs": [dict(job) for job in replicated_jobs]},
        }
        return self.apply(body)

    def get_jobset(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.get(JOBSET_API, "JobSet", namespace, name)

    def set_jobset_status(
        self,
        namespace: str,
        name: str,
        replicated_jobs_status: Sequence[Mapping[str, Any]],
        **other_status: Any,
    ) -> dict[str, Any]:
        """Set ``status.replicatedJobsStatus`` (plus any other status fields) via /status."""
        path = self.resource_path(JOBSET_API, "JobSet", namespace, name) + "/status"
        status = {**other_status, "replicatedJobsStatus": [dict(s) for s in replicated_jobs_status]}
        return self.api_ok("PATCH", path, {"status": status}, content_type="application/merge-patch+json")

    def delete_jobset(self, namespace: str, name: str) -> bool:
        return self.delete(JOBSET_API, "JobSet", namespace, name)

    # ---------------------------------------------------------------------- CRDs
    def install_crds(self, crd_dir: Path = CRD_DIR, timeout_s: float = 30.0) -> list[str]:
        """Create every CRD in ``crd_dir`` (*.yaml) and wait until each is established and served."""
        crd_api = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        crds = [doc for path in sorted(crd_dir.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]
        for crd in crds:
            resp = self.api("POST", crd_api, crd)
            if not resp.ok and resp.status_code != 409:
                raise KubeApiError("POST", crd_api, resp)
        deadline = time.monotonic() + timeout_s
        for crd in crds:
            name = crd["metadata"]["name"]
            group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
            version = next(v["name"] for v in crd["spec"]["versions"] if v.get("served", True))
            while True:
                obj = self.api_ok("GET", f"{crd_api}/{name}")
                established = any(
                    c.get("type") == "Established" and c.get("status") == "True"
                    for c in obj.get("status", {}).get("conditions", [])
                )
                if established and self.api("GET", f"/apis/{group}/{version}/{plural}").ok:
                    break
                if time.monotonic() > deadline:
                    raise KubeClusterError(f"CRD {name} not served after {timeout_s:.0f} s: {obj.get('status')}")
                time.sleep(0.1)
        return [crd["metadata"]["name"] for crd in crds]
