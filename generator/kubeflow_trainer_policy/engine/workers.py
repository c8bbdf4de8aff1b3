"""Worker processes for work that loads the embedded OPA engine in each worker."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor


def worker_count(tasks: int) -> int:
    """One worker per core, never more than there are tasks."""
    return max(1, min(tasks, os.cpu_count() or 1))


def engine_workers(tasks: int) -> ProcessPoolExecutor:
    """A pool for `tasks` independent, CPU-bound tasks. Spawned, not forked: a fork of a process running Go's
    runtime (the engine) is unsafe."""
    return ProcessPoolExecutor(worker_count(tasks), mp_context=multiprocessing.get_context("spawn"))
