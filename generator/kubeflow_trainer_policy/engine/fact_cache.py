"""Facts about Rego kept on disk between processes, keyed by the text they are about: a module's source (what
OPA's parser finds in it, engine/rego_ast.py) or a template's modules (that they compile alone, gatekeeper/runner.py).

Parsing a template's Rego with OPA's parser is most of a `trainer-policy review` process's start-up
(docs/performance.md), and users run review in CI loops over many manifests with the same templates. A fact
depends only on that text, the engine's version and how facts are read from the AST, so all three make the key:
a changed module, a reinstalled engine or a new extraction never meets an old entry.

`TRAINER_POLICY_CACHE_DIR` names the folder; set to an empty string it turns the cache off. The
default is `$XDG_CACHE_HOME/kubeflow-trainer-policy/facts` (`~/.cache/...`). The cache is an
optimisation only: an entry that is missing, unreadable or malformed is parsed again, a folder that
cannot be written is skipped silently, and modules that do not parse are never stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from contextlib import suppress
from pathlib import Path
from typing import Any

ENV_VAR = "TRAINER_POLICY_CACHE_DIR"
FACTS_FORMAT = "1"
"""Bump when rego_ast reads different facts from the same AST."""


def cache_dir() -> Path | None:
    configured = os.environ.get(ENV_VAR)
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kubeflow-trainer-policy" / "facts"


def _engine_identity() -> str:
    """The embedded engine's library file by size and modification time: any reinstall or upgrade changes it
    (cheaper than importlib.metadata, which scans every installed distribution)."""
    try:
        import opa_bindings
    except ImportError as exc:
        from kubeflow_trainer_policy.engine.embedded import ENGINE_MISSING, EngineMissingError

        raise EngineMissingError(ENGINE_MISSING) from exc
    library = Path(opa_bindings.__file__).with_name("libopabridge.so")
    try:
        stat = library.stat()
    except OSError:
        return "unknown"
    return f"{library}:{stat.st_size}:{stat.st_mtime_ns}"


class FactCache:
    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._salt = f"{FACTS_FORMAT}\0{_engine_identity()}\0".encode()

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / (hashlib.sha256(self._salt + key.encode()).hexdigest() + ".json")

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored JSON object for `key`, or None (absent, unreadable, not an object)."""
        if self.folder is None:
            return None
        try:
            body = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return body if isinstance(body, dict) else None

    def put(self, key: str, body: dict[str, Any]) -> None:
        if self.folder is None:
            return
        with suppress(OSError):
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=self.folder, prefix=".fact.", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(body, handle)
                os.replace(temporary, self._path(key))
            finally:
                with suppress(FileNotFoundError):
                    os.unlink(temporary)
