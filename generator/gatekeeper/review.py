"""The document Gatekeeper puts in `input.review`, built exactly as Gatekeeper v3.20 builds it.

Gatekeeper decodes the AdmissionRequest into its Go type and serialises it again, so the review
always has the keys that type never omits (`uid`, `kind`, `resource`, `operation`, `userInfo`,
`object`, `oldObject`, `options`), with empty values when unknown, and keeps the optional ones
(`name`, `namespace`, `dryRun`, `subResource`, `requestKind`, ...) only when set. Unknown keys are
dropped. The webhook evaluates DELETE with `object` = `oldObject`. Audit, and gator's bare objects,
review a stored object with `operation: ""`. Recorded from real Gatekeeper in
tests/gatekeeper/conformance/.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from generator.errors import InputError
from generator.gatekeeper.documents import Document, dig, group_version_kind

OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
ADMISSION_API_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
ADMISSION_REVIEW = "AdmissionReview"
REVIEW_USER = "trainer-policy-review"
"""userInfo.username of the CREATE request `review` builds for a bare object."""

_GVK_KEYS = ("group", "version", "kind")
_GVR_KEYS = ("group", "version", "resource")
_USER_INFO_KEYS = ("username", "uid", "groups", "extra")
_OPTIONAL_STRINGS = ("subResource", "requestSubResource", "name", "namespace")


@dataclass
class AdmissionRequest:
    """The review as Gatekeeper sees it; `as_input()` is `input.review`."""

    body: dict[str, Any]

    @property
    def operation(self) -> str:
        return self.body.get("operation", "")

    @property
    def object(self) -> dict[str, Any] | None:
        return self.body.get("object")

    @property
    def old_object(self) -> dict[str, Any] | None:
        return self.body.get("oldObject")

    @property
    def namespace(self) -> str:
        return self.body.get("namespace") or ""

    def as_input(self) -> dict[str, Any]:
        return self.body


def _struct(value: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """A Go struct whose string fields are never omitted: every key, "" when missing."""
    value = value if isinstance(value, dict) else {}
    return {k: value[k] if isinstance(value.get(k), str) else "" for k in keys}


def _user_info(value: Any) -> dict[str, Any]:
    """authentication/v1 UserInfo: every field is omitted when empty."""
    value = value if isinstance(value, dict) else {}
    return {k: value[k] for k in _USER_INFO_KEYS if value.get(k) not in (None, "", [], {})}


def _gatekeeper_review(request: dict[str, Any]) -> dict[str, Any]:
    """An AdmissionRequest (as sent by the API server) -> Gatekeeper's input.review."""
    review: dict[str, Any] = {
        "uid": request["uid"] if isinstance(request.get("uid"), str) else "",
        "kind": _struct(request.get("kind"), _GVK_KEYS),
        "resource": _struct(request.get("resource"), _GVR_KEYS),
        "operation": request.get("operation") or "",
        "userInfo": _user_info(request.get("userInfo")),
        "object": request.get("object"),
        "oldObject": request.get("oldObject"),
        "options": request.get("options"),
    }
    for key in _OPTIONAL_STRINGS:
        if isinstance(request.get(key), str) and request[key]:
            review[key] = request[key]
    if isinstance(request.get("requestKind"), dict):
        review["requestKind"] = _struct(request["requestKind"], _GVK_KEYS)
    if isinstance(request.get("requestResource"), dict):
        review["requestResource"] = _struct(request["requestResource"], _GVR_KEYS)
    if isinstance(request.get("dryRun"), bool):
        review["dryRun"] = request["dryRun"]
    if review["operation"] == "DELETE":
        # Gatekeeper's webhook evaluates DELETE with object set to the object being deleted.
        review["object"] = review["oldObject"]
    return review


def audit_request(obj: dict[str, Any]) -> AdmissionRequest:
    """The review Gatekeeper's audit (and gator, for a bare object) builds for a stored object."""
    group, version, kind = group_version_kind(obj)
    review: dict[str, Any] = {
        "uid": "",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": "", "version": "", "resource": ""},
        "operation": "",
        "userInfo": {},
        "object": obj,
        "oldObject": None,
        "options": None,
    }
    for key in ("name", "namespace"):
        value = dig(obj, "metadata", key)
        if isinstance(value, str) and value:
            review[key] = value
    return AdmissionRequest(review)


def guess_resource(kind: str) -> str:
    """The plural resource of a kind, as kubectl's UnsafeGuessKindToResource guesses it."""
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u"):
        return lower[:-1] + "ies"
    return lower + "s"


OPTIONS_KINDS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


def apiserver_request(
    operation: str,
    obj: dict[str, Any] | None,
    old: dict[str, Any] | None = None,
    *,
    uid: str | None = None,
    username: str = REVIEW_USER,
) -> dict[str, Any]:
    """The AdmissionRequest an API server sends to a validating webhook for this operation."""
    subject = obj if obj is not None else old
    group, version, kind = group_version_kind(subject or {})
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": guess_resource(kind)}
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "operation": operation,
        "userInfo": {"username": username},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": OPTIONS_KINDS[operation]}
        if operation in OPTIONS_KINDS
        else None,
    }
    for key in ("name", "namespace"):
        value = dig(subject, "metadata", key)
        if isinstance(value, str) and value:
            request[key] = value
    return request


def admission_review_document(request: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": ADMISSION_REVIEW, "request": request}


def create_request(obj: dict[str, Any], source: str) -> AdmissionRequest:
    """The CREATE request the API server would send for `obj` (what `review` assumes for a bare object)."""
    _, version, kind = group_version_kind(obj)
    if not kind or not version:
        raise InputError(source, "must have apiVersion and kind", field="object")
    return AdmissionRequest(_gatekeeper_review(apiserver_request("CREATE", obj)))


def is_admission_review(body: dict[str, Any]) -> bool:
    """An AdmissionReview, or something that tries to be one (wrong kind or apiVersion)."""
    api_version = body.get("apiVersion")
    return (
        body.get("kind") == ADMISSION_REVIEW
        or (isinstance(api_version, str) and api_version.startswith("admission.k8s.io/"))
        or ("request" in body and "metadata" not in body)
    )


def request_from_document(doc: Document) -> AdmissionRequest:
    """An AdmissionReview's request as Gatekeeper's webhook sees it, or a bare object taken as CREATE."""
    body = doc.body
    if not is_admission_review(body):
        return create_request(body, doc.source)
    if body.get("kind") != ADMISSION_REVIEW:
        raise InputError(doc.source, f"must be {ADMISSION_REVIEW} for an admission review", field="kind")
    if body.get("apiVersion") not in ADMISSION_API_VERSIONS:
        raise InputError(doc.source, f"must be one of {', '.join(ADMISSION_API_VERSIONS)}", field="apiVersion")
    request = body.get("request")
    if not isinstance(request, dict):
        raise InputError(doc.source, "required: a mapping", field="request")
    _validate(doc, request)
    return AdmissionRequest(_gatekeeper_review(request))


def _validate(doc: Document, request: dict[str, Any]) -> None:
    """What every request from an API server has: a known operation and the objects it implies."""
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise InputError(doc.source, f"must be one of {', '.join(OPERATIONS)}", field="request.operation")
    for key in ("object", "oldObject"):
        value = request.get(key)
        if value is not None and not isinstance(value, dict):
            raise InputError(doc.source, "must be a mapping (a Kubernetes object)", field=f"request.{key}")
    if operation in ("CREATE", "UPDATE") and request.get("object") is None:
        raise InputError(doc.source, f"required for {operation}", field="request.object")
    if operation in ("UPDATE", "DELETE") and request.get("oldObject") is None:
        raise InputError(doc.source, f"required for {operation}", field="request.oldObject")
    if request.get("kind") is not None and not isinstance(request.get("kind"), dict):
        raise InputError(doc.source, "must be a mapping {group, version, kind}", field="request.kind")


def gator_request(doc: Document) -> AdmissionRequest:
    """A gator suite case: an AdmissionReview is an admission request, a bare object is reviewed as audit."""
    if is_admission_review(doc.body):
        return request_from_document(doc)
    return audit_request(doc.body)
