"""What `check-config` says about a rule list before any workload is seen.

Two findings. A selector that can never match anything (an empty list, an owner kind the
service does not act on) is an error naming its key: the rule is surely a mistake. A rule that
an earlier rule always wins against (the earlier one selects a superset) is explained: the
config is valid, but the later rule is dead.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from autoscaler.domain.policy.rules import Rule, Selector

# Selector field → its camelCase key under `match`, as the user wrote it.
KEYS = {
    "namespaces": "namespaces",
    "namespace_labels": "namespaceLabels",
    "local_queues": "localQueues",
    "cluster_queues": "clusterQueues",
    "cohorts": "cohorts",
    "priority_classes": "priorityClasses",
    "gpu_models": "gpuModels",
    "owner_kinds": "ownerKinds",
    "owner_labels": "ownerLabels",
}
_LISTS = tuple(key for key in KEYS if key not in ("namespace_labels", "owner_labels"))
_MAPS = ("namespace_labels", "owner_labels")


@dataclass(frozen=True)
class Finding:
    key: str  # e.g. "match.ownerKinds", relative to the rule
    text: str


def impossible(selector: Selector, *, enabled_kinds: Collection[str]) -> tuple[Finding, ...]:
    """Criteria no workload the service may act on can ever meet."""
    found = [
        Finding(f"match.{KEYS[name]}", "an empty list matches nothing; leave it out to match any")
        for name in _LISTS
        if getattr(selector, name) == ()
    ]
    kinds = selector.owner_kinds or ()
    disabled = sorted(set(kinds) - set(enabled_kinds))
    if disabled and len(disabled) == len(set(kinds)):
        found.append(
            Finding(
                "match.ownerKinds",
                f"{', '.join(disabled)} not enabled in cluster.ownerKinds: "
                "such workloads are never acted on, so this rule never applies",
            )
        )
    return tuple(found)


def shadowed(rules: Sequence[Rule]) -> tuple[str, ...]:
    """Why each rule that can never match can't: an earlier rule selects all it selects."""
    said: list[str] = []
    for position, rule in enumerate(rules):
        earlier = next((e for e in rules[:position] if covers(e.selector, rule.selector)), None)
        if earlier is not None:
            said.append(
                f"rule {rule.name} can never match: rule {earlier.name} comes first and "
                f"selects everything it selects ({describe(earlier.selector)})"
            )
    return tuple(said)


def covers(wide: Selector, narrow: Selector) -> bool:
    """Every workload `narrow` selects, `wide` selects too."""
    for name in _LISTS:
        outer, inner = getattr(wide, name), getattr(narrow, name)
        if outer is not None and (inner is None or not set(inner) <= set(outer)):
            return False
    for name in _MAPS:
        outer_map: Mapping[str, str] = getattr(wide, name) or {}
        inner_map: Mapping[str, str] = getattr(narrow, name) or {}
        if any(inner_map.get(key) != value for key, value in outer_map.items()):
            return False
    return True


def describe(selector: Selector) -> str:
    parts = []
    for name, key in KEYS.items():
        value = getattr(selector, name)
        if value is None:
            continue
        if name in _MAPS:
            shown = ", ".join(f"{k}={v}" for k, v in sorted(value.items()))
        else:
            shown = ", ".join(value)
        parts.append(f"{key}: [{shown}]")
    return "; ".join(parts) or "every workload"
