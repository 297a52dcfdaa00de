"""An owner kind's pod selector template (`ray.io/cluster={name}`): parsed once, rendered for
one owner or for every owner at once, and matched against a pod's labels in memory."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_REQUIREMENT = re.compile(r"^(!?)([^\s!=]+)\s*(?:(==|=|!=)\s*(\S*))?$")


@dataclass(frozen=True)
class PodSelector:
    """An owner kind's pod selector template such as `ray.io/cluster={name}`.

    Equality-based syntax only (`k=v`, `k==v`, `k!=v`, `k`, `!k`), which is what owner
    labels need. `{name}` stands for the owner's name.
    """

    requirements: tuple[tuple[bool, str, str | None, str], ...]  # (negated, key, op, value)

    @classmethod
    def parse(cls, template: str) -> PodSelector:
        parsed = []
        for part in (p.strip() for p in template.split(",")):
            found = _REQUIREMENT.match(part)
            if found is None or (found[1] and found[3]):
                raise ValueError(f"unsupported pod selector requirement {part!r} in {template!r}")
            operator = "=" if found[3] == "==" else found[3]
            parsed.append((bool(found[1]), found[2], operator, found[4] or ""))
        return cls(tuple(parsed))

    def for_owner(self, name: str) -> str:
        """The selector of one owner's pods."""
        return ",".join(_render(r, name) for r in self.requirements)

    def across_owners(self) -> str:
        """A selector of every owner's pods at once: `k={name}` becomes `k` (exists)."""
        parts = []
        for negated, key, operator, value in self.requirements:
            if "{name}" not in value:
                parts.append(_render((negated, key, operator, value), ""))
            elif operator == "=":
                parts.append(key)
        return ",".join(parts)

    def owner_label(self, owner: str) -> tuple[str, str] | None:
        """A label (key, value) every pod `owner`'s selector matches carries, to look its
        pods up by; None when no equality names the owner."""
        for negated, key, operator, value in self.requirements:
            if operator == "=" and not negated and "{name}" in value:
                return key, value.replace("{name}", owner)
        return None

    def matches(self, labels: Mapping[str, str], *, owner: str) -> bool:
        return all(_holds(r, labels, owner) for r in self.requirements)


def _render(requirement: tuple[bool, str, str | None, str], name: str) -> str:
    negated, key, operator, value = requirement
    if operator is None:
        return ("!" if negated else "") + key
    return f"{key}{operator}{value.replace('{name}', name)}"


def _holds(
    requirement: tuple[bool, str, str | None, str], labels: Mapping[str, str], owner: str
) -> bool:
    negated, key, operator, value = requirement
    if operator is None:
        return (key in labels) != negated
    equal = labels.get(key) == value.replace("{name}", owner)
    return equal if operator == "=" else not equal
