"""The test session's wiring works with the pytest and pytest-xdist this venv has: tests that share a heavy session
fixture (tests/conftest.py SHARED_FIXTURES) run on one worker. When grouping silently stops (pytest 9.2 with
pytest-xdist 3.8), every worker starts its own kube-apiserver and builds its own wheel."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).with_name("conftest.py")

PROBE = """\
import os

import pytest


@pytest.fixture(scope="session")
def project_wheel():
    return os.environ["PYTEST_XDIST_WORKER"]


@pytest.mark.parametrize("n", range(6))
def test_shares(project_wheel, n):
    assert project_wheel


@pytest.mark.parametrize("n", range(6))
def test_free(n):
    pass
"""


def test_tests_sharing_a_heavy_fixture_run_on_one_worker(tmp_path: Path):
    probe = tmp_path / "tests"
    probe.mkdir()
    # The real conftest's grouping hook, without its plugins and fixtures that need the repository.
    source = CONFTEST.read_text()
    hook = source[source.index("SHARED_FIXTURES = ") : source.index("@pytest.fixture(")]
    (probe / "conftest.py").write_text("import pytest\n\n" + hook)
    (probe / "test_probe.py").write_text(PROBE)
    shutil.copy(CONFTEST.parents[1] / "pyproject.toml", tmp_path / "pyproject.toml")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    workers = re.findall(r"\[(gw\d)\] .*PASSED tests/test_probe.py::test_shares", proc.stdout)
    assert len(workers) == 6 and len(set(workers)) == 1, proc.stdout[-2000:]
    assert len(set(re.findall(r"\[(gw\d)\] ", proc.stdout))) == 2, "the probe did not use two workers"
