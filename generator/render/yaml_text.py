"""Deterministic YAML text: block literals for multi-line strings, keys in the order given."""

from __future__ import annotations

from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def dump(value: Any) -> str:
    return yaml.dump(value, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120, allow_unicode=True)


def dump_all(values: list[Any]) -> str:
    return yaml.dump_all(
        values, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120, allow_unicode=True
    )
