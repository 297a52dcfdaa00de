"""The policy's figures per rule: which workloads each rule judged, what it would have stopped,
and which workloads were not judged because the history cannot tell their rule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from autoscaler.backtest.deactivation import Deactivation
from autoscaler.backtest.identity import WorkloadKey
from autoscaler.backtest.rulebook import HistoryMatch
from autoscaler.domain.durations import format_duration
from autoscaler.domain.policy.decisions import Policy
from autoscaler.domain.policy.rules import RuleAction

RULE_UNKNOWN = "rule unknown"
OBSERVE_NOTE = "observe: the rule only reports, so none of its workloads counts as a deactivation"
_LISTED = 10  # unknown workloads named in the table; JSON names them all


@dataclass(frozen=True)
class RuleFigures:
    rule: str
    action: str
    reclaim: str
    window: timedelta
    threshold: float
    workloads: int  # RayClusters that matched it
    deactivations: int
    gpu_hours: float

    def as_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "action": self.action,
            "reclaim": self.reclaim,
            "window": format_duration(self.window),
            "thresholdPercent": round(self.threshold * 100, 6),
            "rayClusters": self.workloads,
            "deactivations": self.deactivations,
            "gpuHours": round(self.gpu_hours, 3),
        }


@dataclass(frozen=True)
class RuleSummary:
    rules: tuple[RuleFigures, ...]  # in matching order, the default last
    unknown: tuple[tuple[str, str], ...]  # (namespace/RayCluster, why): never judged

    def as_json(self) -> dict[str, Any]:
        return {
            "rules": [r.as_json() for r in self.rules],
            "ruleUnknown": [{"rayCluster": w, "why": why} for w, why in self.unknown],
        }


def summarize(
    policy: Policy, matches: Mapping[WorkloadKey, HistoryMatch], found: Sequence[Deactivation]
) -> RuleSummary:
    """`found`: the policy's own would-be deactivations, each naming its rule."""
    figures = []
    for rule in policy.rules:
        mine = [d for d in found if d.rule == rule.name]
        figures.append(
            RuleFigures(
                rule=rule.name,
                action=rule.action.value,
                reclaim=rule.reclaim.value,
                window=rule.usage.window,
                threshold=rule.usage.threshold,
                workloads=sum(1 for m in matches.values() if m.known and m.rule.name == rule.name),
                deactivations=len(mine),
                gpu_hours=sum(d.gpu_hours for d in mine),
            )
        )
    unknown = tuple(
        (str(key), match.unknown)
        for key, match in sorted(matches.items())
        if match.unknown is not None
    )
    return RuleSummary(tuple(figures), unknown)


def rule_lines(summary: RuleSummary) -> list[str]:
    head = [
        "RULE",
        "ACTION",
        "RECLAIM",
        "WINDOW @ THRESHOLD",
        "RAYCLUSTERS",
        "DEACTIVATIONS",
        "GPU-HOURS",
    ]
    rows = [_row(r) for r in summary.rules]
    if summary.unknown:
        rows.append([f"({RULE_UNKNOWN})", "-", "-", "-", str(len(summary.unknown)), "-", "-"])
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    table = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [head, *rows]
    ]
    notes = [OBSERVE_NOTE] if any(r.action == RuleAction.OBSERVE for r in summary.rules) else []
    named = [f"{RULE_UNKNOWN}, not judged: {w}: {why}" for w, why in summary.unknown[:_LISTED]]
    if len(summary.unknown) > _LISTED:
        named.append(f"... and {len(summary.unknown) - _LISTED} more (see --output json)")
    return ["Per rule (the policy's column):", *table, *notes, *named]


def _row(figures: RuleFigures) -> list[str]:
    observe = figures.action == RuleAction.OBSERVE
    return [
        figures.rule,
        figures.action,
        figures.reclaim,
        f"{format_duration(figures.window)} @ {figures.threshold * 100:g}%",
        str(figures.workloads),
        "0 (observe)" if observe else str(figures.deactivations),
        f"{figures.gpu_hours:.1f}",
    ]
