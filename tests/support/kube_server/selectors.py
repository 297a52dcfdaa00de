"""labelSelector and fieldSelector parsing and matching, with the API server's semantics.

Label selectors: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` (exists), `!k`.
`!=` and `notin` also match objects that lack the label, as in Kubernetes.
Field selectors: `path=v`, `path==v`, `path!=v` on any dotted path (metadata.name, status.phase...).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import bad_request

_SET_REQUIREMENT = re.compile(r"^([^\s!=()]+)\s+(in|notin)\s+\((.*)\)$")
_EQUALITY = re.compile(r"^([^\s!=()]+)\s*(==|!=|=)\s*([^\s!=()]*)$")
_KEY = re.compile(r"^(!?)([^\s!=(),]+)$")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!"
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        return {
            "=": present and value in self.values,
            "in": present and value in self.values,
            "!=": not present or value not in self.values,
            "notin": not present or value not in self.values,
            "exists": present,
            "!": not present,
        }[self.operator]


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside `( )` of a set requirement."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return [part for part in parts if part]


def _parse_requirement(text: str) -> Requirement:
    if found := _SET_REQUIREMENT.match(text):
        values = frozenset(v.strip() for v in found[3].split(",") if v.strip())
        return Requirement(found[1], found[2], values)
    if found := _EQUALITY.match(text):
        operator = "!=" if found[2] == "!=" else "="
        return Requirement(found[1], operator, frozenset({found[3]}))
    if found := _KEY.match(text):
        return Requirement(found[2], "!" if found[1] else "exists")
    raise bad_request(f"unable to parse requirement: {text!r}")


def parse_label_selector(text: str | None) -> tuple[Requirement, ...]:
    """All requirements must hold; an empty selector matches everything."""
    return tuple(_parse_requirement(part) for part in _split_top_level(text or ""))


def labels_match(requirements: tuple[Requirement, ...], obj: Mapping[str, Any]) -> bool:
    labels = obj.get("metadata", {}).get("labels") or {}
    return all(requirement.matches(labels) for requirement in requirements)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The field as the API server compares it: a string, "" when absent."""
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)


def parse_field_selector(text: str | None) -> tuple[Requirement, ...]:
    requirements = []
    for part in _split_top_level(text or ""):
        found = _EQUALITY.match(part)
        if not found:
            raise bad_request(f"invalid field selector: {part!r}")
        operator = "!=" if found[2] == "!=" else "="
        requirements.append(Requirement(found[1], operator, frozenset({found[3]})))
    return tuple(requirements)


def fields_match(requirements: tuple[Requirement, ...], obj: Mapping[str, Any]) -> bool:
    return all((field_value(obj, r.key) in r.values) == (r.operator == "=") for r in requirements)


def object_filter(
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> Callable[[Mapping[str, Any]], bool]:
    """One predicate for list and watch: namespace, then labels, then fields."""
    labels = parse_label_selector(label_selector)
    fields = parse_field_selector(field_selector)

    def matches(obj: Mapping[str, Any]) -> bool:
        if namespace and obj.get("metadata", {}).get("namespace") != namespace:
            return False
        return labels_match(labels, obj) and fields_match(fields, obj)

    return matches
