"""Session-wide test wiring: the real kube-apiserver fixture (`kube_cluster`) and the `kube` marker."""

pytest_plugins = ["tests.kube.plugin"]
