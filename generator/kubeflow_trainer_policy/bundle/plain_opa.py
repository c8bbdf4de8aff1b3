"""The plain-OPA entry point of a bundle: `data.kubeflow.trainer.decision` over the profile's constraints.

Gatekeeper evaluates each Constraint's template with `input.review` and `input.parameters`; plain OPA
(`opa run -b`, `opa eval -b`, kube-mgmt) has no Constraints, so the bundle carries them as data
(`kubeflow/trainer/data.json`: kind, name, template, enforcementAction, match, parameters) and a
generated module that matches each one the way Gatekeeper does and collects its template's
violations. Templates whose Rego calls `external_data` are left out: that builtin is Gatekeeper's,
and OPA refuses a bundle that calls an undefined function.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kubeflow_trainer_policy.engine.rego_ast import RegoParser
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy.gatekeeper.constraint import Constraint
from kubeflow_trainer_policy.gatekeeper.match import MatchError, selector_matches
from kubeflow_trainer_policy.gatekeeper.policy_set import PolicySet
from kubeflow_trainer_policy.gatekeeper.template import ConstraintTemplate

ENTRY_PACKAGE = "kubeflow.trainer"
ENTRY_ROOT = "kubeflow/trainer"
ENTRY_MODULE = f"{ENTRY_ROOT}/decision.rego"
ENTRY_DATA = f"{ENTRY_ROOT}/data.json"
GATEKEEPER_ONLY_BUILTINS = frozenset({"external_data"})
_LIST_FIELDS = ("namespaces", "excludedNamespaces")
_KNOWN_MATCH_FIELDS = frozenset(
    {"kinds", "scope", "namespaces", "excludedNamespaces", "labelSelector", "namespaceSelector", "name"}
)


@dataclass(frozen=True)
class PlainOpaPolicies:
    templates: list[ConstraintTemplate]
    """The templates plain OPA can run, by Constraint kind."""
    constraints: list[Constraint]
    left_out: dict[str, str]
    """Template name -> why it is not in the bundle."""


def gatekeeper_only_calls(template: ConstraintTemplate, parser: RegoParser) -> set[str]:
    """The Gatekeeper-only builtins any of the template's modules (entry or lib) calls."""
    calls: set[str] = set()
    for module in template.modules:
        calls |= parser.parse(module.path, module.source).calls & GATEKEEPER_ONLY_BUILTINS
    return calls


def select_policies(policy_set: PolicySet, parser: RegoParser) -> PlainOpaPolicies:
    templates, left_out = [], {}
    for kind in sorted(policy_set.templates):
        template = policy_set.templates[kind]
        calls = gatekeeper_only_calls(template, parser)
        if calls:
            left_out[template.name] = f"calls {', '.join(sorted(calls))}, which only Gatekeeper provides"
        else:
            templates.append(template)
    kinds = {t.kind for t in templates}
    constraints = sorted((c for c in policy_set.constraints if c.kind in kinds), key=lambda c: (c.kind, c.name))
    for constraint in constraints:
        check_match(constraint)
    return PlainOpaPolicies(templates, constraints, left_out)


def check_match(constraint: Constraint) -> None:
    """The entry point's Rego assumes a well-formed spec.match (as Gatekeeper's CRD schema ensures)."""
    match = constraint.match

    def bad(field: str, message: str) -> InputError:
        return InputError(constraint.source, message, field=f"spec.match.{field}")

    unknown = sorted(set(match) - _KNOWN_MATCH_FIELDS)
    if unknown:
        raise bad(unknown[0], "not a match criterion Gatekeeper knows")
    for i, entry in enumerate(match.get("kinds") or []):
        if not isinstance(entry, dict):
            raise bad(f"kinds[{i}]", "must be a mapping of apiGroups and kinds")
        for key in ("apiGroups", "kinds"):
            if not _string_list(entry.get(key)):
                raise bad(f"kinds[{i}].{key}", "must be a list of strings")
    for key in _LIST_FIELDS:
        if not _string_list(match.get(key)):
            raise bad(key, "must be a list of strings")
    if match.get("name") is not None and not isinstance(match["name"], str):
        raise bad("name", "must be a string")
    for key in ("labelSelector", "namespaceSelector"):
        if match.get(key) is not None:
            _check_selector(match[key], bad, key)


def _string_list(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _check_selector(selector: Any, bad: Any, field: str) -> None:
    try:
        selector_matches(selector, {})
    except MatchError as exc:
        raise bad(field, str(exc)) from exc
    labels = selector.get("matchLabels")
    if labels is not None and not (isinstance(labels, dict) and all(isinstance(v, str) for v in labels.values())):
        raise bad(f"{field}.matchLabels", "must map label keys to strings")
    for i, expression in enumerate(selector.get("matchExpressions") or []):
        if not isinstance(expression.get("key"), str) or not _string_list(expression.get("values")):
            raise bad(f"{field}.matchExpressions[{i}]", "needs a string key and a list of string values")


def entry_data(policies: PlainOpaPolicies) -> bytes:
    templates = {t.kind: t.name for t in policies.templates}
    constraints = [
        {
            "kind": c.kind,
            "name": c.name,
            "template": templates[c.kind],
            "enforcementAction": c.enforcement_action,
            "match": c.match,
            "parameters": c.parameters,
        }
        for c in policies.constraints
    ]
    return (json.dumps({"constraints": constraints}, indent=2, sort_keys=True) + "\n").encode()


def entry_module(policies: PlainOpaPolicies, header: str) -> bytes:
    dispatch = "".join(_DISPATCH.format(kind=t.kind, package=t.package) for t in policies.templates)
    return (header + _ENTRY.replace("{dispatch}", dispatch)).encode()


_DISPATCH = """
template_violations(c) := found if {{
	c.kind == "{kind}"
	r := review
	p := c.parameters
	found := data.{package}.violation with input as {{"review": r, "parameters": p}}
}}
"""

_ENTRY = """
# METADATA
# title: Plain-OPA entry point
# description: >-
#   Evaluates every Constraint of the bundle (data.kubeflow.trainer.constraints) the way Gatekeeper
#   does: match on the request's object or oldObject, then the template's violation rule with
#   input.review and input.parameters. Input: an AdmissionReview (`input.request`, as kube-mgmt and
#   the apiserver send it) or Gatekeeper's shape (`input.review`). JobSet and Namespace state comes
#   from data.inventory in Gatekeeper's layout. `decision` is what `trainer-policy review -o json`
#   prints; `deny` and `warn` hold "[constraint] msg" lines; `admission_review` is a webhook response.
package kubeflow.trainer

raw_request := r if {
	r := input.review
	is_object(r)
} else := r if {
	r := input.request
	is_object(r)
}

# Gatekeeper's webhook evaluates DELETE with object set to the object being deleted.
request := object.union(raw_request, {"object": raw_request.oldObject}) if {
	raw_request.operation == "DELETE"
	is_object(raw_request.oldObject)
} else := raw_request

# request.namespace, or (for a hand-written request without it) the namespace of its object.
namespace_name := n if {
	n := request.namespace
	nonempty_string(n)
} else := n if {
	n := request.object.metadata.namespace
	nonempty_string(n)
} else := n if {
	not is_object(request.object)
	n := request.oldObject.metadata.namespace
	nonempty_string(n)
}

namespace_object := ns if {
	ns := data.inventory.cluster.v1.Namespace[namespace_name]
	is_object(ns)
}

# What each template sees as input.review (Gatekeeper 3.22+ adds the Namespace as namespaceObject).
review := object.union(request, {"namespaceObject": ns}) if {
	ns := namespace_object
} else := request

default template_violations(_) := []
{dispatch}
# METADATA
# title: decision
# description: >-
#   {"allowed": bool, "violations": [{constraint, template, enforcementAction, msg, details}]}, plus
#   "errors" when the request could not be evaluated completely (then allowed is false).
decision := {"allowed": allowed, "violations": violations} if count(errors) == 0

decision := {"allowed": false, "violations": violations, "errors": sort(errors)} if count(errors) > 0

default allowed := false

allowed if {
	count(errors) == 0
	not denied
}

denied if {
	some v in violations
	v.enforcementAction == "deny"
}

# METADATA
# title: deny
# description: Gatekeeper's denial lines "[constraint] msg" of every deny-action violation, plus every error.
deny contains sprintf("[%s] %s", [v.constraint, v.msg]) if {
	some v in violations
	v.enforcementAction == "deny"
}

deny contains e if some e in errors

# METADATA
# title: warn
# description: The "[constraint] msg" lines of warn-action violations (Gatekeeper returns them as warnings).
warn contains sprintf("[%s] %s", [v.constraint, v.msg]) if {
	some v in violations
	v.enforcementAction == "warn"
}

# METADATA
# title: admission_review
# description: An admission.k8s.io/v1 AdmissionReview response, for OPA serving as the webhook.
admission_review := {
	"apiVersion": "admission.k8s.io/v1",
	"kind": "AdmissionReview",
	"response": object.union({"uid": uid, "allowed": allowed}, response_details),
}

uid := u if {
	u := raw_request.uid
	is_string(u)
} else := ""

response_details := {"status": {"code": 403, "reason": "Forbidden", "message": concat("\\n", sort(deny))}} if {
	not allowed
} else := {"warnings": sort(warn)} if {
	count(warn) > 0
} else := {}

# Violations sorted by constraint kind, constraint name and message, like the Gatekeeper runner.
violations := [row[3] | some row in sort(rows)]

rows contains [c.kind, c.name, v.msg, {
	"constraint": c.name,
	"template": c.template,
	"enforcementAction": c.enforcementAction,
	"msg": v.msg,
	"details": object.get(v, "details", {}),
}] if {
	some c in matched
	some v in template_violations(c)
	is_violation(v)
}

is_violation(v) if {
	is_object(v)
	is_string(v.msg)
}

matched contains c if {
	some c in data.kubeflow.trainer.constraints
	some obj in candidates
	object_matches(c.match, obj)
}

candidates contains obj if {
	some key in ["object", "oldObject"]
	obj := request[key]
	is_object(obj)
}

errors contains "input has no AdmissionRequest: give input.request (an AdmissionReview) or input.review" if {
	not raw_request
}

errors contains "the request has neither object nor oldObject" if {
	_ = raw_request
	count(candidates) == 0
}

errors contains sprintf("template %s: violation without a string `msg`: %v", [c.template, v]) if {
	some c in matched
	some v in template_violations(c)
	not is_violation(v)
}

errors contains sprintf(
	"constraint %s: match failed: namespaceSelector needs the Namespace %v in data.inventory",
	[c.name, ns],
) if {
	some c in data.kubeflow.trainer.constraints
	c.match.namespaceSelector != null
	some obj in candidates
	matches_before_namespace_selector(c.match, obj)
	not is_namespace(obj)
	not namespace_object
	ns := obj.metadata.namespace
	nonempty_string(ns)
}

# Gatekeeper's match criteria (pkg/mutation/match), for one object.
object_matches(match, obj) if {
	matches_before_namespace_selector(match, obj)
	namespace_selector_matches(object.get(match, "namespaceSelector", null), obj)
	name_matches(object.get(match, "name", null), obj)
}

matches_before_namespace_selector(match, obj) if {
	kinds_match(object.get(match, "kinds", null), obj)
	scope_matches(object.get(match, "scope", null), obj)
	namespaces_match(object.get(match, "namespaces", null), obj)
	not excluded(object.get(match, "excludedNamespaces", null), obj)
	label_selector_matches(object.get(match, "labelSelector", null), obj)
}

nonempty_string(s) if {
	is_string(s)
	s != ""
}

nonempty_array(a) if {
	is_array(a)
	count(a) > 0
}

string_field(obj, path) := s if {
	s := object.get(obj, path, "")
	is_string(s)
} else := ""

api_group(obj) := concat("/", array.slice(parts, 0, count(parts) - 1)) if {
	parts := split(string_field(obj, ["apiVersion"]), "/")
}

is_namespace(obj) if {
	string_field(obj, ["kind"]) == "Namespace"
	api_group(obj) == ""
}

kinds_match(kinds, _) if not nonempty_array(kinds)

kinds_match(kinds, obj) if {
	some k in kinds
	is_object(k)
	listed(object.get(k, "kinds", null), string_field(obj, ["kind"]))
	listed(object.get(k, "apiGroups", null), api_group(obj))
}

listed(values, _) if not nonempty_array(values)

listed(values, _) if "*" in values

listed(values, value) if value in values

has_namespace(obj) if nonempty_string(object.get(obj, ["metadata", "namespace"], null))

has_namespace(_) if namespace_object

scope_matches(scope, _) if not scope in {"Cluster", "Namespaced"}

scope_matches("Cluster", obj) if is_namespace(obj)

scope_matches("Cluster", obj) if not has_namespace(obj)

scope_matches("Namespaced", obj) if {
	not is_namespace(obj)
	has_namespace(obj)
}

# The object's namespace; undefined for a cluster-scoped object.
namespace_of(obj) := string_field(obj, ["metadata", "name"]) if is_namespace(obj)

namespace_of(obj) := string_field(namespace_object, ["metadata", "name"]) if {
	not is_namespace(obj)
	namespace_object
}

namespace_of(obj) := ns if {
	not is_namespace(obj)
	not namespace_object
	ns := object.get(obj, ["metadata", "namespace"], null)
	nonempty_string(ns)
}

namespaces_match(patterns, _) if not nonempty_array(patterns)

namespaces_match(patterns, obj) if {
	nonempty_array(patterns)
	not namespace_of(obj)
}

namespaces_match(patterns, obj) if {
	some p in patterns
	wildcard(p, namespace_of(obj))
}

excluded(patterns, obj) if {
	some p in patterns
	wildcard(p, namespace_of(obj))
}

wildcard(p, value) if {
	startswith(p, "*")
	endswith(value, substring(p, 1, -1))
}

wildcard(p, value) if {
	not startswith(p, "*")
	endswith(p, "*")
	startswith(value, trim_suffix(p, "*"))
}

wildcard(p, value) if {
	not startswith(p, "*")
	not endswith(p, "*")
	p == value
}

labels(obj) := l if {
	l := obj.metadata.labels
	is_object(l)
} else := {}

object_or_empty(x) := x if {
	is_object(x)
} else := {}

array_or_empty(x) := x if {
	is_array(x)
} else := []

label_selector_matches(null, _)

label_selector_matches(selector, obj) if {
	selector != null
	selector_matches(selector, labels(obj))
}

selector_matches(selector, labels) if {
	every key, value in object_or_empty(object.get(selector, "matchLabels", null)) {
		labels[key] == value
	}
	every e in array_or_empty(object.get(selector, "matchExpressions", null)) {
		expression_matches(e, labels)
	}
}

expression_matches(e, labels) if {
	e.operator == "In"
	labels[e.key] in e.values
}

expression_matches(e, labels) if {
	e.operator == "NotIn"
	not labels[e.key]
}

expression_matches(e, labels) if {
	e.operator == "NotIn"
	value := labels[e.key]
	not value in e.values
}

expression_matches(e, labels) if {
	e.operator == "Exists"
	_ = labels[e.key]
}

expression_matches(e, labels) if {
	e.operator == "DoesNotExist"
	not labels[e.key]
}

namespace_selector_matches(null, _)

namespace_selector_matches(selector, obj) if {
	selector != null
	is_namespace(obj)
	selector_matches(selector, labels(obj))
}

namespace_selector_matches(selector, obj) if {
	selector != null
	not is_namespace(obj)
	not namespace_object
	not has_namespace(obj)
}

namespace_selector_matches(selector, obj) if {
	selector != null
	not is_namespace(obj)
	selector_matches(selector, labels(namespace_object))
}

name_matches(name, _) if not nonempty_string(name)

name_matches(name, obj) if {
	nonempty_string(name)
	wildcard(name, string_field(obj, ["metadata", "name"]))
}
"""
