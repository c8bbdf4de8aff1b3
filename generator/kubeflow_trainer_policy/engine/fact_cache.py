"""Facts about Rego kept on disk between processes, keyed by the text they are about: a module's source (what
OPA's parser finds in it, engine/rego_ast.py) or a template's modules (that they compile alone, gatekeeper/runner.py).

Parsing a template's Rego with OPA's parser is most of a `trainer-policy review` process's start-up
(docs/performance.md), and users run review in CI loops over many manifests with the same templates. A fact
depends only on that text, the engine's version and how facts are read from the AST, so all three make the key:
a changed module, a reinstalled engine or a new extraction never meets an old entry.

The cache is an optimisation that cannot decide (issue 40, item 3): a fact decides what `review` queries and
which tests `test` runs, so an entry is used only when it proves it was written here for this very text:

- its file name is the SHA-256 of the text (with the engine and format), and the entry repeats the text's
  SHA-256, checked on load (an entry copied or renamed to another name is refused);
- it carries an HMAC-SHA256 of all it says, with a key of 32 random bytes kept outside the cache folder
  (`$XDG_STATE_HOME/kubeflow-trainer-policy/fact-cache.key`, `~/.local/state/...`), so an entry edited by hand
  or restored from another machine's cache (CI caches are shared between branches) does not verify;
- it is read only if it is a regular file of this user, at most MAX_ENTRY_BYTES, opened without following a
  symlink and without blocking (a FIFO or a symlink to /dev/zero is refused, not read);
- the folders are created 0700, and a folder (or key) that another user can write, or that another user owns,
  is not used at all.

Anything else is ignored with a one-line warning on stderr and the fact is computed again (and rewritten).
`TRAINER_POLICY_CACHE_DIR` names the folder; set to an empty string it turns the cache off. The default is
`$XDG_CACHE_HOME/kubeflow-trainer-policy/facts` (`~/.cache/...`). Modules that do not parse are never stored.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import secrets
import stat
import sys
import weakref
from contextlib import suppress
from pathlib import Path
from typing import Any

ENV_VAR = "TRAINER_POLICY_CACHE_DIR"
FACTS_FORMAT = "2"
"""Bump when rego_ast reads different facts from the same AST (2: entries carry the source hash and an HMAC)."""
MAX_ENTRY_BYTES = 1024 * 1024
"""Far above any module's facts (a few KB): a larger entry is not ours."""
KEY_BYTES = 32
KEY_NAME = "fact-cache.key"


def cache_dir() -> Path | None:
    configured = os.environ.get(ENV_VAR)
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kubeflow-trainer-policy" / "facts"


def key_dir() -> Path:
    """Where the HMAC key lives: state, not cache, so that restoring or sharing a cache folder never brings the
    key that would make its entries verify."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kubeflow-trainer-policy"


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
        stat_result = library.stat()
    except OSError:
        return "unknown"
    return f"{library}:{stat_result.st_size}:{stat_result.st_mtime_ns}"


_warned: set[str] = set()
_keys: dict[Path, bytes] = {}
"""Per process: each warning once, and the key read once (a review makes a cache for parsing and for compiling)."""


def warn(message: str) -> None:
    line = f"trainer-policy: warning: fact cache: {' '.join(message.split())}"
    if line not in _warned:
        _warned.add(line)
        print(line, file=sys.stderr)


class UnsafeFolder(Exception):
    pass


def _open_private_folder(path: Path) -> int:
    """A file descriptor of `path` (made 0700 if missing), refused unless it is a folder owned by this user that
    no other user can write. Everything below is reached through this descriptor, so the folder checked is the
    folder used even if the path is swapped afterwards."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise UnsafeFolder(f"{path}: {exc.strerror or exc}") from exc
    info = os.fstat(fd)
    problem = ""
    if info.st_uid != os.geteuid():
        problem = f"owned by uid {info.st_uid}, not by this user (uid {os.geteuid()})"
    elif info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = f"writable by other users (mode {stat.S_IMODE(info.st_mode):04o})"
    if problem:
        os.close(fd)
        raise UnsafeFolder(f"{path}: {problem}; not used (make it 0700)")
    return fd


def _read_private_file(dir_fd: int, name: str, limit: int) -> bytes:
    """The bytes of a regular file of this user, at most `limit`; ValueError naming what else it is."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:  # O_NOFOLLOW: a symlink fails with ELOOP, and is never followed
        raise ValueError("a symlink" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"not a regular file (mode {info.st_mode:o})")
        if info.st_uid != os.geteuid():
            raise ValueError(f"owned by uid {info.st_uid}, not by this user")
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise ValueError("writable by other users")
        if info.st_size > limit:
            raise ValueError(f"{info.st_size} bytes, more than {limit}")
        data = os.read(fd, limit + 1)
        if len(data) > limit:
            raise ValueError(f"more than {limit} bytes")
        return data
    finally:
        os.close(fd)


def _write_private_file(dir_fd: int, name: str, data: bytes) -> None:
    """`name` replaced whole (a temporary file of mode 0600, renamed over it), never through a symlink."""
    temporary = f".{name}.{secrets.token_hex(8)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    finally:
        with suppress(FileNotFoundError):
            os.unlink(temporary, dir_fd=dir_fd)


def _load_key(folder: Path) -> bytes:
    """The HMAC key: read from the private state folder, or made there (32 random bytes) on first use."""
    if folder in _keys:
        return _keys[folder]
    fd = _open_private_folder(folder)
    try:
        try:
            key = _read_private_file(fd, KEY_NAME, KEY_BYTES)
        except FileNotFoundError:
            key = b""
        except ValueError as exc:
            warn(f"{folder / KEY_NAME}: {exc}; a new key is made (entries written with the old one are rebuilt)")
            key = b""
        if len(key) != KEY_BYTES:
            key = secrets.token_bytes(KEY_BYTES)
            _write_private_file(fd, KEY_NAME, key)
        _keys[folder] = key
        return key
    finally:
        os.close(fd)


class FactCache:
    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._salt = f"{FACTS_FORMAT}\0{_engine_identity()}\0".encode()
        self._dir_fd: int | None = None
        self._key = b""
        self._usable: bool | None = None  # None: not opened yet
        self._closer: weakref.finalize | None = None

    def _open(self) -> bool:
        """Opens (once) the folder and the key; False, with one warning, when either is not safe to use."""
        if self._usable is None:
            self._usable = False
            if self.folder is not None:
                try:
                    self._key = _load_key(key_dir())
                    self._dir_fd = _open_private_folder(self.folder)
                    # Closed when the cache is collected, or at exit (a finalizer, unlike __del__, runs before
                    # the interpreter tears its modules down).
                    self._closer = weakref.finalize(self, os.close, self._dir_fd)
                    self._usable = True
                except UnsafeFolder as exc:
                    warn(str(exc))
                except OSError as exc:
                    warn(f"{self.folder}: {exc.strerror or exc}; not used")
        return self._usable

    def close(self) -> None:
        if self._closer is not None:
            self._closer()
        self._dir_fd = None
        self._usable = None

    def _name(self, source_hash: str) -> str:
        return hashlib.sha256(self._salt + source_hash.encode()).hexdigest() + ".json"

    def _mac(self, source_hash: str, body: dict[str, Any]) -> str:
        signed = json.dumps([FACTS_FORMAT, self._salt.decode(), source_hash, body], sort_keys=True).encode()
        return hmac.new(self._key, signed, hashlib.sha256).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored JSON object for `key` when its entry verifies; None when there is none, or (with a warning)
        when it does not verify."""
        if self.folder is None or not self._open():
            return None
        assert self._dir_fd is not None
        source_hash = hashlib.sha256(key.encode()).hexdigest()
        name = self._name(source_hash)
        try:
            entry = json.loads(_read_private_file(self._dir_fd, name, MAX_ENTRY_BYTES))
            body = _verified(entry, source_hash, self._mac)
        except FileNotFoundError:
            return None
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            warn(f"{self.folder / name}: {exc}; ignored and rebuilt")
            return None
        return body

    def put(self, key: str, body: dict[str, Any]) -> None:
        if self.folder is None or not self._open():
            return
        assert self._dir_fd is not None
        source_hash = hashlib.sha256(key.encode()).hexdigest()
        entry = {"source_sha256": source_hash, "body": body, "hmac": self._mac(source_hash, body)}
        try:
            _write_private_file(self._dir_fd, self._name(source_hash), json.dumps(entry).encode())
        except OSError as exc:
            warn(f"{self.folder}: cannot write an entry: {exc.strerror or exc}")


def _verified(entry: Any, source_hash: str, mac: Any) -> dict[str, Any]:
    if not isinstance(entry, dict) or not isinstance(entry.get("body"), dict):
        raise ValueError("not a fact cache entry")
    if entry.get("source_sha256") != source_hash:
        raise ValueError("written for another source (its source hash differs)")
    stored = entry.get("hmac")
    if not isinstance(stored, str) or not hmac.compare_digest(stored, mac(source_hash, entry["body"])):
        raise ValueError("does not verify (edited, or written with another key)")
    return entry["body"]
