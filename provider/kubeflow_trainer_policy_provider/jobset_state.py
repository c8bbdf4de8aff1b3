"""The value the provider returns for one TrainJob key: what rule A needs to know of its JobSet.

Value schema (stable, documented in deploy/README.md):
    {"found": bool, "activeReplicatedJobs": [str, ...]}
`activeReplicatedJobs` lists, in `status.replicatedJobsStatus` order, the names of replicated jobs
whose `active` is a positive integer. Only `active` counts: ready, succeeded, failed, suspended,
the JobSet's own spec.suspend and its conditions are ignored.
"""

from __future__ import annotations

from typing import Any

JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"


def active_replicated_jobs(jobset: dict[str, Any]) -> list[str]:
    status = jobset.get("status")
    entries = status.get("replicatedJobsStatus") if isinstance(status, dict) else None
    names: list[str] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        active = entry.get("active")
        if isinstance(active, int) and not isinstance(active, bool) and active > 0:
            names.append(str(entry.get("name", "")))
    return names


def jobset_state(jobset: dict[str, Any] | None) -> dict[str, Any]:
    if jobset is None:
        return {"found": False, "activeReplicatedJobs": []}
    return {"found": True, "activeReplicatedJobs": active_replicated_jobs(jobset)}
