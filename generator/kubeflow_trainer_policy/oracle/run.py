"""One Trainer release's oracle as a long-lived process: a JSON line in ({review, objects}), a JSON line out
(allowed, field errors). The Go side (tools/trainer-oracle) builds a fresh fake client per request."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubeflow_trainer_policy.oracle.build import ensure_built

GO_ERROR_TYPES = {
    "FieldValueNotFound": "NotFound",
    "FieldValueRequired": "Required",
    "FieldValueDuplicate": "Duplicate",
    "FieldValueInvalid": "Invalid",
    "FieldValueNotSupported": "NotSupported",
    "FieldValueForbidden": "Forbidden",
    "FieldValueTooLong": "TooLong",
    "FieldValueTooMany": "TooMany",
    "InternalError": "Internal",
    "FieldValueTypeInvalid": "TypeInvalid",
}
"""field.ErrorType (Go) -> the type word of the project's violations (lib.trainer.violations)."""

SCHEMA_BLOCKING = frozenset(
    {"FieldValueTypeInvalid", "FieldValueRequired", "FieldValueNotSupported", "FieldValueTooLong", "FieldValueTooMany"}
)
"""The schema errors after which the API server does not even run the CRD's CEL rules (customresource strategy's
hasBlockingErr), nor, a fortiori, the admission webhooks."""

FieldError = tuple[str, str, str]
"""(field, type, detail); field and type are "" for an error that is not a field.Error."""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    errors: frozenset[FieldError]
    message: str = ""
    warnings: tuple[str, ...] = ()
    defaulted: dict[str, Any] | None = None
    """The request's object and oldObject as the API server hands them to webhooks (CRD defaults applied)."""
    schema_rejected: bool = False
    """The CRD's OpenAPI schema rejects the object outright (a wrong type, a missing required field, ...): the API
    server answers before any validating webhook, the Trainer's or Gatekeeper's, is called."""

    def as_json(self) -> dict[str, Any]:
        return {
            "allowed": self.allowed,
            "errors": [{"field": f, "type": t, "detail": d} for f, t, d in sorted(self.errors)],
            "message": self.message,
            "warnings": list(self.warnings),
        }


class OracleError(Exception):
    """The oracle process failed or rejected its input."""


class Oracle:
    """The validating webhooks of Trainer `tag`, asked one request at a time."""

    def __init__(self, tag: str, binary: Path | None = None):
        self.tag = tag
        self.binary = binary or ensure_built(tag)
        self._process: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [str(self.binary)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                bufsize=1,
            )
        return self._process

    def decide(self, review: dict[str, Any], objects: list[dict[str, Any]]) -> Decision:
        process = self._start()
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps({"review": review, "objects": objects}) + "\n")
        process.stdin.flush()
        line = process.stdout.readline()
        if not line:
            raise OracleError(f"the Trainer {self.tag} oracle exited (status {process.wait()})")
        body = json.loads(line)
        if body.get("error"):
            raise OracleError(f"Trainer {self.tag} oracle: {body['error']}")
        errors = frozenset(
            (e["field"], GO_ERROR_TYPES.get(e["type"], e["type"]), e["detail"]) for e in body.get("errors") or []
        )
        warnings = tuple(body.get("warnings") or ())
        defaulted = {key: body[key] for key in ("object", "oldObject") if body.get(key) is not None}
        rejected = any(
            (e.get("source") == "crd" and e["type"] in SCHEMA_BLOCKING)
            or (e.get("source") == "webhook" and not e["field"] and e["detail"].startswith("json: "))
            for e in body.get("errors") or []
        )
        return Decision(bool(body["allowed"]), errors, body.get("message", ""), warnings, defaulted, rejected)

    def close(self) -> None:
        if self._process is not None:
            if self._process.stdin:
                self._process.stdin.close()
            self._process.wait(timeout=30)
            self._process = None

    def __enter__(self) -> Oracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
