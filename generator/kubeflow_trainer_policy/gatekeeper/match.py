"""Gatekeeper's match criteria (pkg/mutation/match): kinds, scope, namespaces, selectors, name.

A request matches when its object OR its oldObject matches (Gatekeeper's matchAny).
"""

from __future__ import annotations

from typing import Any

from kubeflow_trainer_policy_provider.documents import dig, group_version_kind


class MatchError(Exception):
    """The match criteria could not be evaluated (bad selector, missing Namespace object)."""


def wildcard_matches(pattern: str, value: str) -> bool:
    if pattern.startswith("*"):
        return value.endswith(pattern[1:])
    if pattern.endswith("*"):
        return value.startswith(pattern[:-1])
    return pattern == value


def selector_matches(selector: Any, labels: dict[str, str]) -> bool:
    if not isinstance(selector, dict):
        raise MatchError("label selector must be a mapping")
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_expression_matches(expression, labels) for expression in selector.get("matchExpressions") or [])


def _expression_matches(expression: Any, labels: dict[str, str]) -> bool:
    if not isinstance(expression, dict):
        raise MatchError("matchExpressions entries must be mappings")
    key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
    if operator in ("In", "NotIn") and not values:
        raise MatchError(f"operator {operator} needs values for key {key!r}")
    if operator in ("Exists", "DoesNotExist") and values:
        raise MatchError(f"operator {operator} takes no values for key {key!r}")
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    raise MatchError(f"unknown selector operator {operator!r}")


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    labels = dig(obj, "metadata", "labels")
    return labels if isinstance(labels, dict) else {}


def _is_namespace(obj: dict[str, Any]) -> bool:
    group, _, kind = group_version_kind(obj)
    return kind == "Namespace" and group == ""


def _namespace_of(obj: dict[str, Any], ns: dict[str, Any] | None) -> str | None:
    if _is_namespace(obj):
        return dig(obj, "metadata", "name") or ""
    if ns is not None:
        return dig(ns, "metadata", "name") or ""
    return dig(obj, "metadata", "namespace") or None


def object_matches(match: dict[str, Any], obj: dict[str, Any], ns: dict[str, Any] | None) -> bool:
    group, _, kind = group_version_kind(obj)
    kinds = match.get("kinds") or []
    if kinds and not any(
        (not k.get("kinds") or "*" in k["kinds"] or kind in k["kinds"])
        and (not k.get("apiGroups") or "*" in k["apiGroups"] or group in k["apiGroups"])
        for k in kinds
        if isinstance(k, dict)
    ):
        return False
    has_namespace = bool(dig(obj, "metadata", "namespace")) or ns is not None
    scope = match.get("scope")
    if scope == "Cluster" and not (_is_namespace(obj) or not has_namespace):
        return False
    if scope == "Namespaced" and not (not _is_namespace(obj) and has_namespace):
        return False
    namespace = _namespace_of(obj, ns)
    namespaces = match.get("namespaces") or []
    if namespaces and namespace is not None and not any(wildcard_matches(p, namespace) for p in namespaces):
        return False
    excluded = match.get("excludedNamespaces") or []
    if excluded and namespace is not None and any(wildcard_matches(p, namespace) for p in excluded):
        return False
    if match.get("labelSelector") is not None and not selector_matches(match["labelSelector"], _labels(obj)):
        return False
    if match.get("namespaceSelector") is not None and not _namespace_selector_matches(match, obj, ns):
        return False
    name = match.get("name")
    return not name or wildcard_matches(name, dig(obj, "metadata", "name") or "")


def _namespace_selector_matches(match: dict[str, Any], obj: dict[str, Any], ns: dict[str, Any] | None) -> bool:
    if _is_namespace(obj):
        return selector_matches(match["namespaceSelector"], _labels(obj))
    if ns is None and not dig(obj, "metadata", "namespace"):
        return True
    if ns is None:
        raise MatchError(
            f"namespace selector for namespace-scoped object {dig(obj, 'metadata', 'name')!r} but missing Namespace "
            f"{dig(obj, 'metadata', 'namespace')!r} (pass it among the cluster objects)"
        )
    return selector_matches(match["namespaceSelector"], _labels(ns))


def request_matches(match: dict[str, Any], review: dict[str, Any], ns: dict[str, Any] | None) -> bool:
    objects = [o for o in (review.get("object"), review.get("oldObject")) if isinstance(o, dict)]
    if not objects:
        raise MatchError("neither object nor old object are defined")
    return any(object_matches(match, obj, ns) for obj in objects)
