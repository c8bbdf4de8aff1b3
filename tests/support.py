"""Helpers every test folder shares."""

from __future__ import annotations

import socket
from pathlib import Path

import yaml


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def inventory_of(rule_folder: Path, case: str) -> Path:
    """The cluster objects file of a suite case (cases with the same objects share one samples/cluster-N.yaml)."""
    suite = next(p for p in (rule_folder / "suite.yaml", rule_folder / "external-data-suite.yaml") if p.is_file())
    tests = yaml.safe_load(suite.read_text())["tests"]
    (inventory,) = next(c["inventory"] for test in tests for c in test["cases"] if c["name"] == case)
    return rule_folder / inventory
