"""Structured logs: one JSON object per line on stderr (`ts`, `level`, `event`, then fields)."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, TextIO

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


class JsonLogger:
    """Thread-safe JSON-lines logger; `min_level` drops quieter records."""

    def __init__(self, stream: TextIO | None = None, min_level: str = "info"):
        self._stream = stream
        self._min = _LEVELS[min_level]
        self._lock = threading.Lock()

    def log(self, level: str, event: str, **fields: Any) -> None:
        if _LEVELS[level] < self._min:
            return
        record = {"ts": round(time.time(), 3), "level": level, "event": event, **fields}
        line = json.dumps(record, default=str, separators=(",", ":"))
        stream = self._stream or sys.stderr
        with self._lock:
            stream.write(line + "\n")
            stream.flush()

    def debug(self, event: str, **fields: Any) -> None:
        self.log("debug", event, **fields)

    def info(self, event: str, **fields: Any) -> None:
        self.log("info", event, **fields)

    def warning(self, event: str, **fields: Any) -> None:
        self.log("warning", event, **fields)

    def error(self, event: str, **fields: Any) -> None:
        self.log("error", event, **fields)
