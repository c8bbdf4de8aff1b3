"""The provider over its watch-cache source, the cache filled from a JSON List (for the benchmark).

`python -m benchmarks.watch_cache_server DATA.json [provider serve flags]`: builds a KubeJobSetSource
(never started: no kube-apiserver), installs the List's answers as a completed list would, and serves
it with the real ProviderServer, so the watch path's serving and memory are measured without
creating 100k JobSets in an API server.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path

from kubeflow_trainer_policy_provider.http_server import Limits
from kubeflow_trainer_policy_provider.kube_auth import KubeCredentials
from kubeflow_trainer_policy_provider.kube_source import KubeJobSetSource
from kubeflow_trainer_policy_provider.logs import JsonLogger
from kubeflow_trainer_policy_provider.metrics import ProviderMetrics
from kubeflow_trainer_policy_provider.server import ProviderServer, ServeConfig
from kubeflow_trainer_policy_provider.sources import Lookup
from kubeflow_trainer_policy_provider.tls import TLSFiles


class PrefilledSource(KubeJobSetSource):
    """No watcher and no API server: the cache is filled by install_list, and a thread stands in for the
    prober of a healthy API (confirming the cache twice a second), so lookups take the same freshness check
    as in production."""

    def start(self) -> None:
        def confirm() -> None:
            while not self._stop.wait(0.5):
                self._confirmed_at = time.monotonic()

        threading.Thread(target=confirm, name="confirm", daemon=True).start()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("data")
    parser.add_argument("--listen", required=True)
    parser.add_argument("--tls-cert", required=True)
    parser.add_argument("--tls-key", required=True)
    parser.add_argument("--client-ca")
    parser.add_argument("--log-level", default="error")
    args = parser.parse_args(argv)
    metrics, logger = ProviderMetrics(), JsonLogger(min_level=args.log_level)
    source = PrefilledSource(KubeCredentials(server="https://127.0.0.1:1"), metrics, logger)
    items = {}
    for obj in json.loads(Path(args.data).read_bytes())["items"]:
        items[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = Lookup.of(obj)
    source.install_list(items, "1")
    host, _, port = args.listen.rpartition(":")
    config = ServeConfig(TLSFiles(args.tls_cert, args.tls_key, args.client_ca), host, int(port), limits=Limits())
    server = ProviderServer(source, config, metrics, logger)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server.start()
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
