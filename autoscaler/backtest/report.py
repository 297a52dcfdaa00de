"""The backtest's figures per namespace and in total, per variant, as a table or as JSON."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from autoscaler.backtest.deactivation import Deactivation
from autoscaler.backtest.identity import RAYCLUSTER
from autoscaler.backtest.modes import ModeFigures, mode_lines
from autoscaler.backtest.occupancy import Occupancy
from autoscaler.backtest.queues import NO_QUEUE_DATA
from autoscaler.backtest.rule_report import RuleSummary, rule_lines
from autoscaler.backtest.states import StateCount, state_lines
from autoscaler.backtest.variant import Variant
from autoscaler.domain.durations import format_duration

TOTAL = "TOTAL"
UNKNOWN_SHOWN = 10  # pods named in the table's notes; JSON lists them all


@dataclass(frozen=True)
class Figures:
    deactivations: int
    gpu_hours: float
    regrets: int

    @classmethod
    def of(cls, found: Iterable[Deactivation]) -> Figures:
        items = list(found)
        return cls(
            deactivations=len(items),
            gpu_hours=sum(d.gpu_hours for d in items),
            regrets=sum(1 for d in items if d.regret),
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "deactivations": self.deactivations,
            "gpuHours": round(self.gpu_hours, 3),
            "regrets": self.regrets,
        }


@dataclass(frozen=True)
class VariantReport:
    variant: Variant
    is_policy: bool
    deactivations: tuple[Deactivation, ...]

    @property
    def total(self) -> Figures:
        return Figures.of(self.deactivations)

    def namespace(self, name: str) -> Figures:
        return Figures.of(d for d in self.deactivations if d.workload.namespace == name)

    @property
    def namespaces(self) -> list[str]:
        return sorted({d.workload.namespace for d in self.deactivations})


@dataclass(frozen=True)
class Report:
    start: datetime
    end: datetime
    step: timedelta
    horizon: timedelta
    gpus: int
    workloads: int
    skipped_pods: int  # GPU pods not judged: not owned by a kind of the table, or unknown
    warnings: tuple[str, ...]
    variants: tuple[VariantReport, ...]  # the policy first, then the alternatives
    chart: tuple[VariantReport, ...]  # the policy's threshold at each chart window
    occupancy: Occupancy  # GPUs held and held idle over time
    modes: tuple[ModeFigures, ...] | None = None  # always vs when-contended; None: no queue data
    rules: RuleSummary | None = None  # the policy's column per rule
    states: tuple[StateCount, ...] = ()  # the policy's states at the steps it judged
    kinds: Mapping[str, int] = field(default_factory=dict)  # workloads per owner kind
    owner_unknown: tuple[tuple[str, str, str], ...] = ()  # (namespace, pod, why): not judged
    owner_note: str | None = None  # how owners were found, when not from kube-state-metrics

    @property
    def policy(self) -> VariantReport:
        return next(v for v in self.variants if v.is_policy)

    @property
    def namespaces(self) -> list[str]:
        return sorted({ns for v in self.variants for ns in v.namespaces})


def table(report: Report) -> list[str]:
    head = [
        f"Backtest {report.start:%Y-%m-%d %H:%M} to {report.end:%Y-%m-%d %H:%M} UTC, "
        f"a decision every {format_duration(report.step)}: {report.gpus} GPUs in "
        f"{_workloads(report)}"
        + (f" ({report.skipped_pods} other GPU pods skipped)" if report.skipped_pods else ""),
        f"Each cell: would-be deactivations / GPU-hours reclaimable / regrets (GPUs busy "
        f"again within {format_duration(report.horizon)})",
        "",
    ]
    columns = ["NAMESPACE", *(_title(v) for v in report.variants)]
    rows = [[ns, *(_cell(v.namespace(ns)) for v in report.variants)] for ns in report.namespaces]
    rows.append([TOTAL, *(_cell(v.total) for v in report.variants)])
    warnings = [f"warning: {w}" for w in report.warnings]
    modes = ["", *mode_lines(report.policy.variant, report.modes)]
    rules = (
        ["", *rule_lines(report.rules)] if report.rules and report.policy.variant.by_rule else []
    )
    states = ["", *state_lines(report.states)] if report.states else []
    owners = [f"Owners: {report.owner_note}"] if report.owner_note else []
    owners += _unknown_lines(report)
    tail = rules + states + (["", *owners] if owners else []) + modes
    tail += ["", *warnings] if warnings else []
    return head + _aligned([columns, *rows]) + tail


def _workloads(report: Report) -> str:
    """ "16 RayClusters", or "5 workloads (1 Deployment, 3 RayCluster, 1 JobSet)"."""
    if set(report.kinds) <= {"RayCluster"}:
        return f"{report.workloads} RayClusters"
    each = ", ".join(f"{count} {kind}" for kind, count in report.kinds.items())
    return f"{report.workloads} workloads ({each})"


def _unknown_lines(report: Report) -> list[str]:
    """Each GPU pod whose owner is unknown, with why: not judged, never counted idle."""
    found = report.owner_unknown
    if not found:
        return []
    shown = [f"  {ns}/{pod}: {why}" for ns, pod, why in found[:UNKNOWN_SHOWN]]
    more = len(found) - UNKNOWN_SHOWN
    return [
        f"{len(found)} GPU pods not judged, their owner unknown (never counted idle):",
        *shown,
        *([f"  ... and {more} more (--output json lists them all)"] if more > 0 else []),
    ]


def as_json(report: Report) -> dict[str, Any]:
    return {
        "start": _stamp(report.start),
        "end": _stamp(report.end),
        "step": format_duration(report.step),
        "regretHorizon": format_duration(report.horizon),
        "gpus": report.gpus,
        "rayClusters": report.kinds.get("RayCluster", 0),
        "workloads": report.workloads,
        "ownerKinds": dict(report.kinds),
        "skippedPods": report.skipped_pods,
        "ownerNote": report.owner_note,
        "ownerUnknown": [
            {"namespace": ns, "pod": pod, "why": why} for ns, pod, why in report.owner_unknown
        ],
        "warnings": list(report.warnings),
        "variants": [_variant_json(v, details=True) for v in report.variants],
        "chart": [_variant_json(v, details=False) for v in report.chart],
        "reclaimModes": [m.as_json() for m in report.modes] if report.modes else NO_QUEUE_DATA,
        **(report.rules.as_json() if report.rules else {}),
        "states": [c.as_json() for c in report.states],
    }


def _variant_json(report: VariantReport, *, details: bool) -> dict[str, Any]:
    found: dict[str, Any] = {
        "window": format_duration(report.variant.window),
        "thresholdPercent": round(report.variant.threshold * 100, 6),
        "byRule": report.variant.by_rule,
        "policy": report.is_policy,
        "total": report.total.as_json(),
    }
    if details:
        found["namespaces"] = {ns: report.namespace(ns).as_json() for ns in report.namespaces}
        found["deactivations"] = [_deactivation_json(d) for d in report.deactivations]
    return found


def _deactivation_json(found: Deactivation) -> dict[str, Any]:
    return {
        "namespace": found.workload.namespace,
        **_owner_json(found),
        "nameFromWorker": not found.workload.exact,
        "gpus": found.gpus,
        "at": _stamp(found.at),
        "until": _stamp(found.until),
        "gpuHours": round(found.gpu_hours, 3),
        "rule": found.rule,
        "cameBack": found.came_back,
        "regret": found.regret,
    }


def _owner_json(found: Deactivation) -> dict[str, str]:
    """`rayCluster` for a RayCluster, as before owners were read; the kind and name else."""
    if found.workload.kind == RAYCLUSTER.kind:
        return {"rayCluster": found.workload.name}
    return {"ownerKind": found.workload.kind, "ownerName": found.workload.name}


def _title(report: VariantReport) -> str:
    return report.variant.label + (" (policy)" if report.is_policy else "")


def _cell(figures: Figures) -> str:
    return f"{figures.deactivations} / {figures.gpu_hours:.1f} / {figures.regrets}"


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")
