"""Kubernetes label selectors (`app=llm,tier in (gpu,cpu),!canary`) parsed and matched in memory.

A trigger's `labelSelector` is judged against the snapshot's GPU pods, so no call ever asks the
Kubernetes API. The grammar is the API server's: `k`, `!k`, `k=v`, `k==v`, `k!=v`,
`k in (v1,v2)`, `k notin (v1,v2)`, joined by commas.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = rf"(?:[a-z0-9](?:[-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}"
_VALUE = rf"(?:{_NAME})?"
_EXISTS = re.compile(rf"^(!?)\s*({_KEY})$")
_EQUALS = re.compile(rf"^({_KEY})\s*(==|=|!=)\s*({_VALUE})$")
_IN_SET = re.compile(rf"^({_KEY})\s+(in|notin)\s*\(([^()]*)\)$")
_SET_VALUE = re.compile(rf"^{_VALUE}$")
# A whole selector as the metrics-api query must give it: the grammar above with spaces as its
# only whitespace and none around the whole. Every selector it matches parses (the parser also
# reads other whitespace); it is plain ASCII, read alike by `re` and ECMA-262 (the OpenAPI
# document's `pattern`), and a query is checked with `re.fullmatch`.
_REQUIREMENT = (
    rf"(?:(?:! *)?{_KEY}"
    rf"|{_KEY} *(?:==|=|!=)(?: *{_NAME})?"  # no space after an empty value: it would end it
    rf"|{_KEY} +(?:in|notin) *\( *{_VALUE} *(?:, *{_VALUE} *)*\))"
)
SELECTOR_PATTERN = rf"^{_REQUIREMENT}(?: *, *{_REQUIREMENT})*$"


class Operator(StrEnum):
    EXISTS = "exists"
    NOT_EXISTS = "!"
    IN = "in"
    NOT_IN = "notin"


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: Operator
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        match self.operator:
            case Operator.EXISTS:
                return present
            case Operator.NOT_EXISTS:
                return not present
            case Operator.IN:
                return present and labels[self.key] in self.values
            case Operator.NOT_IN:
                return not present or labels[self.key] not in self.values

    def __str__(self) -> str:
        if self.operator is Operator.EXISTS:
            return self.key
        if self.operator is Operator.NOT_EXISTS:
            return f"!{self.key}"
        return f"{self.key} {self.operator.value} ({','.join(sorted(self.values))})"


@dataclass(frozen=True)
class Selector:
    requirements: tuple[Requirement, ...]  # sorted, so equal selectors compare equal

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def parse_selector(text: str) -> Selector:
    """Raises ValueError naming the first requirement it cannot read."""
    parts = _split(text)
    if not parts:
        raise ValueError("a label selector needs at least one requirement")
    requirements = {_requirement(part) for part in parts}
    return Selector(tuple(sorted(requirements, key=lambda r: (r.key, str(r)))))


def _split(text: str) -> list[str]:
    """Split on the commas outside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0 or depth > 1:
            raise ValueError(f"unbalanced parentheses in {text!r}")
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    if depth:
        raise ValueError(f"unbalanced parentheses in {text!r}")
    parts.append("".join(current).strip())
    if parts == [""]:
        return []
    if "" in parts:
        raise ValueError(f"empty requirement in {text!r}")
    return parts


def _requirement(part: str) -> Requirement:
    if found := _IN_SET.match(part):
        key, word, listed = found.groups()
        values = [v.strip() for v in listed.split(",")]
        if not all(_SET_VALUE.match(v) for v in values):
            raise ValueError(f"invalid value in {part!r}")
        operator = Operator.IN if word == "in" else Operator.NOT_IN
        return Requirement(key, operator, frozenset(values))
    if found := _EQUALS.match(part):
        key, sign, value = found.groups()
        operator = Operator.NOT_IN if sign == "!=" else Operator.IN
        return Requirement(key, operator, frozenset({value}))
    if found := _EXISTS.match(part):
        negated, key = found.groups()
        return Requirement(key, Operator.NOT_EXISTS if negated else Operator.EXISTS)
    raise ValueError(f"cannot read requirement {part!r}")
