"""docs/policies/: one Markdown page per rule (what, why, parameters, examples from the cases) and an index."""

from __future__ import annotations

import json

from kubeflow_trainer_policy.catalog.model import AUDIT, Case, Rule
from kubeflow_trainer_policy.errors import InputError
from kubeflow_trainer_policy.profiles import DEFAULT_PROFILE, Profile, generated_profiles
from kubeflow_trainer_policy.render.header import header
from kubeflow_trainer_policy.render.yaml_text import dump

MAX_EXAMPLES = 8


def _html_header(source: str) -> str:
    lines = [line.strip() for line in header(source, prefix="").splitlines()]
    return "<!--\n" + "\n".join(lines) + "\n-->\n\n"


def _profiles(rule: Rule, profiles: list[Profile]) -> str:
    """The distinct violation messages each generated profile produces over the rule's cases."""
    lines = []
    for profile in profiles:
        messages = sorted({e.msg for c in rule.cases(profile) for e in c.expected})
        lines += [f"### {profile.name} (Trainer {profile.releases})", "", "```text", *messages, "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def _parameters(rule: Rule) -> str:
    if not rule.parameters:
        return "None.\n"
    rows = ["| name | type | default | description |", "|---|---|---|---|"]
    for p in rule.parameters:
        kind = p.schema.get("type", "")
        if "enum" in p.schema:
            kind += " (" + ", ".join(f"`{v}`" for v in p.schema["enum"]) + ")"
        rows.append(f"| `{p.name}` | {kind} | `{json.dumps(p.default)}` | {p.description} |")
    return "\n".join(rows) + "\n"


def _example(case: Case) -> str:
    operation = "audit (no operation, no oldObject)" if case.operation == AUDIT else case.operation
    lines = [f"#### `{case.name}`", "", f"{case.description} Operation: {operation}."]
    if case.parameters is not None:
        lines += ["", f"Parameters: `{json.dumps(case.parameters, sort_keys=True)}`"]
    if case.expected:
        lines += ["", "Denied:", "", "```text", *[e.msg for e in case.expected], "```"]
    else:
        lines += ["", "Allowed."]
    for title, obj in (("oldObject", case.old_object), ("object", case.object)):
        if obj is not None:
            lines += [
                "",
                f"<details><summary>{title}</summary>",
                "",
                "```yaml",
                dump(obj).rstrip(),
                "```",
                "",
                "</details>",
            ]
    return "\n".join(lines) + "\n"


def _examples(cases: list[Case]) -> list[Case]:
    denied = [c for c in cases if c.expected]
    allowed = [c for c in cases if not c.expected]
    half = MAX_EXAMPLES // 2
    return denied[:half] + allowed[: MAX_EXAMPLES - min(half, len(denied))]


def rule_page(rule: Rule, profiles: list[Profile], default: Profile) -> str:
    cases = rule.cases(default)
    kinds = "; ".join(f"{', '.join(m.kinds)} ({', '.join(m.api_groups)})" for m in rule.match)
    data = []
    if rule.data.inventory:
        data.append("synced " + ", ".join(f"{k.kind} ({k.group}/{k.version})" for k in rule.data.inventory))
    if rule.data.external_data_providers:
        data.append("external data provider " + ", ".join(f"`{p}`" for p in rule.data.external_data_providers))
    body = [
        f"# {rule.title}",
        "",
        f"Rule `{rule.id}`, Constraint kind `{rule.kind}`, template `{rule.template_name}` version {rule.version}.",
        "",
        "## What",
        "",
        " ".join(rule.description.split()),
        "",
        "## Why",
        "",
        " ".join(rule.rationale.split()),
        "",
        "## Applies to",
        "",
        f"- Kinds: {kinds}",
        f"- Operations: {operations_text(rule, profiles)}",
        f"- Data: {'; '.join(data) if data else 'the request only'}",
        "- Bundles: " + ", ".join(f"`bundles/gatekeeper/{p.name}/{rule.id}/`" for p in profiles),
        "",
        "## Parameters",
        "",
        _parameters(rule).rstrip(),
        "",
        "## Messages by profile",
        "",
        _profiles(rule, profiles).rstrip(),
        "",
        f"## Examples (profile {default.name}, from the rule's cases)",
        "",
        "\n".join(_example(c) for c in _examples(cases)).rstrip(),
        "",
        f"All {len(cases)} cases (`policies/{rule.id}/cases.py`) run as Rego tests of every profile, as gator suites "
        "and in pytest.",
    ]
    return _html_header(f"policies/{rule.id}/") + "\n".join(body) + "\n"


def index_page(rules: list[Rule]) -> str:
    rows = ["| rule | kind | what |", "|---|---|---|"]
    rows += [f"| [{r.id}]({r.id}.md) | `{r.kind}` | {r.title} |" for r in rules]
    adding = [
        "## Adding a rule",
        "",
        "1. Add one folder, `policies/<id>/`: `src.rego` is the rule's Rego (package `trainer<id without ->`,",
        "   the metadata in its package METADATA: title, description, `custom.id`, `version`, `match`,",
        "   `operations`, `parameters`, `inventory`, `externalDataProviders`), `src_test.rego` unit-tests its",
        "   helpers, and `cases.py` defines `cases(profile)`, its table of cases. What differs between Trainer",
        "   releases is a table in the Rego keyed by `data.lib.trainer.profile.name`.",
        "2. Run `trainer-policy generate`: the Gatekeeper bundles, the suites, the samples and this page are",
        "   rendered; no other file changes. `trainer-policy test --coverage` runs the unit tests and the cases.",
        "3. A change to an existing rule's Rego needs a new `custom.version` (generation refuses otherwise).",
    ]
    body = ["# Policies", "", *rows, "", *adding]
    return _html_header("policies/") + "\n".join(body) + "\n"


TABLE_BEGIN = (
    "<!-- rule table: generated by `trainer-policy generate` from the catalog; edit the catalog, not this table -->"
)
TABLE_END = "<!-- end of rule table -->"


def operations_text(rule: Rule, profiles: list[Profile]) -> str:
    """The requests the rule judges, with the profiles that judge fewer: `CREATE, UPDATE (v2.0: CREATE)`."""
    text = ", ".join(rule.operations)
    narrower = [
        f"{p.name}: {', '.join(rule.operations_in(p))}" for p in profiles if rule.operations_in(p) != rule.operations
    ]
    return f"{text} ({'; '.join(narrower)})" if narrower else text


def rule_table(rules: list[Rule]) -> str:
    """The README's table of rules: one row per rule, linking its page."""
    rows = ["| rule | kinds | requests | page |", "|---|---|---|---|"]
    for rule in rules:
        kinds = ", ".join(kind for m in rule.match for kind in m.kinds)
        operations = operations_text(rule, generated_profiles())
        page = f"docs/policies/{rule.id}.md"
        rows.append(f"| `{rule.id}` | {kinds} | {operations} | [{page}]({page}) |")
    return "\n".join(rows) + "\n"


PROFILE_TABLE_BEGIN = (
    "<!-- profile table: generated by `trainer-policy generate` from generator/kubeflow_trainer_policy/profiles.py; "
    "edit that, not this table -->"
)
PROFILE_TABLE_END = "<!-- end of profile table -->"


def profile_table(profiles: list[Profile]) -> str:
    """The README's table of shipped profiles: which Trainer releases each fits and where its bundle is."""
    rows = ["| profile | Trainer | override field | bundle |", "|---|---|---|---|"]
    for profile in profiles:
        default = " (default)" if profile.name == DEFAULT_PROFILE else ""
        bundle = f"bundles/gatekeeper/{profile.name}"
        rows.append(
            f"| `{profile.name}`{default} | {profile.releases} | `{profile.override_path}` | [{bundle}]({bundle}) |"
        )
    return "\n".join(rows) + "\n"


def readme_with_rule_table(readme: str, rules: list[Rule], profiles: list[Profile] | None = None) -> str:
    """README.md with the text between the rule table markers (and, given `profiles`, the profile table
    markers) replaced by the current tables."""
    readme = _replace_between(readme, TABLE_BEGIN, TABLE_END, rule_table(rules), "rule table")
    if profiles is not None:
        table = profile_table(profiles)
        readme = _replace_between(readme, PROFILE_TABLE_BEGIN, PROFILE_TABLE_END, table, "profile table")
    return readme


def _replace_between(text: str, begin_marker: str, end_marker: str, body: str, what: str) -> str:
    begin, end = text.find(begin_marker), text.find(end_marker)
    if begin < 0 or end < begin:
        raise InputError("README.md", f"the {what} markers are missing: {begin_marker} ... {end_marker}")
    return text[: begin + len(begin_marker)] + "\n" + body + text[end:]
