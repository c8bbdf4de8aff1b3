"""Kubernetes admission documents as plain data: what an API server sends, what Gatekeeper reviews.

No runner, engine or provider here: the renderer builds its samples and Rego test inputs from these,
and the runner (generator/kubeflow_trainer_policy/gatekeeper/review.py) reads files into them.

Gatekeeper v3.20 decodes the AdmissionRequest into its Go type and serialises it again, so the review
always has the keys that type never omits (`uid`, `kind`, `resource`, `operation`, `userInfo`,
`object`, `oldObject`, `options`), with empty values when unknown, and keeps the optional ones only when
set; unknown keys are dropped; DELETE is evaluated with `object` = `oldObject`. Audit (and gator, for a
bare object) reviews a stored object with `operation: ""` and `oldObject: null`. Recorded from real
Gatekeeper in tests/gatekeeper/conformance/.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from kubeflow_trainer_policy_provider.documents import dig, group_version_kind

ADMISSION_REVIEW = "AdmissionReview"
REVIEW_USER = "trainer-policy-review"
"""userInfo.username of the requests built here (an API server sends the real user)."""

_GVK_KEYS = ("group", "version", "kind")
_GVR_KEYS = ("group", "version", "resource")
_USER_INFO_KEYS = ("username", "uid", "groups", "extra")
_OPTIONAL_STRINGS = ("subResource", "requestSubResource", "name", "namespace")


def _struct(value: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """A Go struct whose string fields are never omitted: every key, "" when missing."""
    value = value if isinstance(value, dict) else {}
    return {k: value[k] if isinstance(value.get(k), str) else "" for k in keys}


def _user_info(value: Any) -> dict[str, Any]:
    """authentication/v1 UserInfo: every field is omitted when empty."""
    value = value if isinstance(value, dict) else {}
    return {k: value[k] for k in _USER_INFO_KEYS if value.get(k) not in (None, "", [], {})}


def gatekeeper_review(request: dict[str, Any]) -> dict[str, Any]:
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


def audit_review(obj: dict[str, Any]) -> dict[str, Any]:
    """Gatekeeper's review of a stored object (audit, and gator's bare objects)."""
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
    return review


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


def inventory_document(objects: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """`data.inventory` in Gatekeeper's layout, as its sync fills it from cluster objects:
    namespace[<ns>][<groupVersion>][<Kind>][<name>] and cluster[<groupVersion>][<Kind>][<name>].

    Like Gatekeeper with nothing synced, a layer exists only where an object is: policies must use
    object.get on every step.
    """
    inventory: dict[str, Any] = {}
    for obj in objects:
        api_version, kind, name = obj.get("apiVersion"), obj.get("kind"), dig(obj, "metadata", "name")
        if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
            continue
        namespace = dig(obj, "metadata", "namespace")
        if namespace:
            tree = inventory.setdefault("namespace", {}).setdefault(namespace, {})
        else:
            tree = inventory.setdefault("cluster", {})
        tree.setdefault(api_version, {}).setdefault(kind, {})[name] = obj
    return inventory
