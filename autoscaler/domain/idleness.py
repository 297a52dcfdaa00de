"""Judging one workload's GPUs from the fleet usage: busy, idle (for how long) or unknown.

"No data" is never idle: a missing, NaN, stale or thinly covered series makes the whole
workload unknown, and unknown never leads to a deactivation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeGuard

from autoscaler.domain.models import FleetUsage, GpuUsage, State, WorkloadInfo


@dataclass(frozen=True)
class UsageRules:
    threshold: float  # utilization ratio at or below which a GPU counts as idle
    window: timedelta  # how long every GPU must stay idle
    slot: timedelta  # resolution of coverage and of "idle since"
    min_coverage: float  # share of slots that must hold a real sample
    stale_after: timedelta  # newest sample older than this: stale
    # Loading (evidence at near-zero compute) counts as activity for at most this long after
    # compute stopped (or admission); past it, the workload is judged on compute alone.
    max_loading: timedelta = timedelta(minutes=60)


@dataclass(frozen=True)
class Assessment:
    state: State  # BUSY, IDLE or UNKNOWN
    reason: str
    peak: float | None = None
    coverage: float | None = None
    idle_since: datetime | None = None
    idle_for: timedelta = timedelta(0)
    evidence: tuple[str, ...] = ()  # what the evidence signals saw, one line each
    idle_held_gpus: int = 0  # IDLE_HELD: GPUs idle the whole window beside busy ones


def assess(
    workload: WorkloadInfo,
    usage: FleetUsage,
    *,
    rules: UsageRules,
    not_before: datetime,
    now: datetime,
) -> Assessment:
    """Judge a workload; `not_before` is when idleness may start counting (admission, pods)."""
    if usage.window != rules.window or usage.threshold != rules.threshold:
        return Assessment(State.UNKNOWN, "usage was read for another window or threshold")
    problem = _structural_problem(workload, usage)
    if problem is not None:
        return Assessment(State.UNKNOWN, problem)
    namespace = workload.ref.namespace
    gpus = [gpu for pod in workload.gpu_pods for gpu in usage.for_pod(namespace, pod.name)]
    peak = max((g.peak for g in gpus if _known(g.peak)), default=None)
    coverage = min(g.coverage for g in gpus)
    busy = [g for g in gpus if g.peak is not None and g.peak > rules.threshold]
    if busy:
        return _busy_or_recently_idle(gpus, busy, rules=rules, not_before=not_before, now=now)
    doubt = _data_problem(gpus, rules=rules, now=now)
    if doubt is not None:
        return Assessment(State.UNKNOWN, doubt, peak=peak, coverage=coverage)
    return _idle(gpus, peak=peak, coverage=coverage, rules=rules, not_before=not_before, now=now)


def _structural_problem(workload: WorkloadInfo, usage: FleetUsage) -> str | None:
    doubt = usage.doubt_about(workload.ref.namespace)
    if doubt is not None:
        return doubt
    if not workload.gpu_pods:
        return "no pod of this workload requests GPUs"
    if len(workload.pods) < workload.expected_pods:
        return f"{len(workload.pods)} of {workload.expected_pods} admitted pods exist"
    not_running = [p.name for p in workload.pods if not p.running]
    if not_running:
        return f"pods not running: {', '.join(sorted(not_running))}"
    for pod in workload.gpu_pods:
        # Count devices, not series: a GPU reported twice must not stand in for a missing one.
        seen = {
            (g.key.uuid, g.key.mig_instance)
            for g in usage.for_pod(workload.ref.namespace, pod.name)
        }
        if len(seen) < pod.gpus:
            return f"pod {pod.name} has {len(seen)} GPU series for {pod.gpus} requested GPUs"
    return None


def _data_problem(gpus: list[GpuUsage], *, rules: UsageRules, now: datetime) -> str | None:
    for gpu in gpus:
        label = f"GPU {gpu.key.uuid} of pod {gpu.key.pod}"
        if not _known(gpu.peak):
            return f"{label} has no usable samples (missing or NaN)"
        if gpu.last_sample_at is None or now - gpu.last_sample_at > rules.stale_after:
            return f"{label} is stale (no sample for more than {rules.stale_after})"
        if not gpu.coverage >= rules.min_coverage:  # also catches a NaN coverage
            return (
                f"{label} covers {gpu.coverage:.0%} of the window, "
                f"below the required {rules.min_coverage:.0%}"
            )
    return None


def _known(peak: float | None) -> TypeGuard[float]:
    """A NaN compares false with everything, so it would pass for idle: treat it as absent."""
    return peak is not None and not math.isnan(peak)


def _busy_or_recently_idle(
    gpus: list[GpuUsage],
    busy: list[GpuUsage],
    *,
    rules: UsageRules,
    not_before: datetime,
    now: datetime,
) -> Assessment:
    peak = max(g.peak for g in busy if g.peak is not None)
    coverage = min(g.coverage for g in gpus)
    since = _idle_since(gpus, not_before=not_before, now=now)
    idle_for = now - since
    # A busy peak must have a last busy sample inside the window; if not, the two answers
    # disagree, and the safe reading of a disagreement is "busy".
    consistent = all(
        g.last_busy_at is not None and now - g.last_busy_at <= rules.window for g in busy
    )
    if consistent and idle_for > rules.slot and _data_problem(gpus, rules=rules, now=now) is None:
        return Assessment(
            State.IDLE,
            f"idle for {_minutes(idle_for)} of {_minutes(rules.window)}; "
            f"peak in window {peak:.0%} > threshold {rules.threshold:.0%}",
            peak=peak,
            coverage=coverage,
            idle_since=since,
            idle_for=idle_for,
        )
    return Assessment(
        State.BUSY,
        f"peak utilization {peak:.0%} above threshold {rules.threshold:.0%}",
        peak=peak,
        coverage=coverage,
    )


def _idle(
    gpus: list[GpuUsage],
    *,
    peak: float | None,
    coverage: float,
    rules: UsageRules,
    not_before: datetime,
    now: datetime,
) -> Assessment:
    since = _idle_since(gpus, not_before=not_before, now=now)
    idle_for = now - since
    peak_text = f"{peak:.0%}" if peak is not None else "n/a"
    if idle_for >= rules.window:
        reason = (
            f"idle for the whole window: every GPU at or below {rules.threshold:.0%} "
            f"for {_minutes(rules.window)} (peak {peak_text}, coverage {coverage:.0%})"
        )
    else:
        reason = (
            f"idle for {_minutes(idle_for)} of {_minutes(rules.window)} "
            f"(counting from admission, pod start or last activity)"
        )
    return Assessment(
        State.IDLE, reason, peak=peak, coverage=coverage, idle_since=since, idle_for=idle_for
    )


def _idle_since(gpus: list[GpuUsage], *, not_before: datetime, now: datetime) -> datetime:
    """The latest of the last busy sample of any GPU and `not_before`; never after `now`."""
    last_busy = [g.last_busy_at for g in gpus if g.last_busy_at is not None]
    since = max([not_before, *last_busy])
    return min(since, now)


def _minutes(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    if seconds % 60:
        return f"{seconds}s"
    return f"{seconds // 60}m"
