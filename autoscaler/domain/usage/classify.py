"""Judging a workload's compute: busy, idle-held, or idle since when; `loading.py` then
weighs the evidence signals for a workload whose compute has stopped.

Compute is the utilization signals' verdict (GR_ENGINE_ACTIVE, GPU_UTIL) per GPU, a shared
GPU's taken as the device's (`attribution.py`). Ray task execution counts like a busy
sample: it moves "idle since". "No data" is never idle: a GPU with missing, NaN, stale or
thinly covered samples makes an otherwise idle workload unknown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from autoscaler.domain.durations import format_duration
from autoscaler.domain.models import GpuUsage, State, WorkloadInfo
from autoscaler.domain.usage.assessment import Assessment, Compute, UsageRules, known
from autoscaler.domain.usage.attribution import Attributed
from autoscaler.domain.usage.evidence import Signal
from autoscaler.domain.usage.loading import weigh


def classify(
    workload: WorkloadInfo,
    facts: Attributed,
    *,
    failures: Mapping[Signal, str],
    rules: UsageRules,
    not_before: datetime,
    now: datetime,
) -> Assessment:
    gpus = facts.gpus
    busy = [g for g in gpus if g.peak is not None and g.peak > rules.threshold]
    compute = Compute(
        peak=max((g.peak for g in gpus if known(g.peak)), default=None),
        coverage=min(g.coverage for g in gpus),
        since=compute_since(facts, not_before=not_before, now=now),
        recently_busy=bool(busy),
    )
    if busy and not _stopped(gpus, busy, compute, rules=rules, now=now):
        return _busy(facts, busy, compute, rules=rules, not_before=not_before, now=now)
    if not busy:
        doubt = data_problem(gpus, rules=rules, now=now)
        if doubt is not None:
            return Assessment(
                State.UNKNOWN, doubt, compute.peak, compute.coverage, evidence=facts.lines
            )
    return weigh(workload, facts, compute, failures=failures, rules=rules, now=now)


def compute_since(facts: Attributed, *, not_before: datetime, now: datetime) -> datetime:
    """The latest of any GPU's last busy sample, the last Ray task seen and `not_before`;
    never after `now`."""
    last_busy = [g.last_busy_at for g in facts.gpus if g.last_busy_at is not None]
    last_task = [s.last_at for s in facts.use]
    return min(max([not_before, *last_busy, *last_task]), now)


def data_problem(gpus: Sequence[GpuUsage], *, rules: UsageRules, now: datetime) -> str | None:
    for gpu in gpus:
        label = f"GPU {gpu.key.uuid} of pod {gpu.key.pod}"
        if not known(gpu.peak):
            return f"{label} has no usable samples (missing or NaN)"
        if gpu.last_sample_at is None or now - gpu.last_sample_at > rules.stale_after:
            return f"{label} is stale (no sample for more than {rules.stale_after})"
        if not gpu.coverage >= rules.min_coverage:  # also catches a NaN coverage
            return (
                f"{label} covers {gpu.coverage:.0%} of the window, "
                f"below the required {rules.min_coverage:.0%}"
            )
    return None


def _stopped(
    gpus: Sequence[GpuUsage],
    busy: Sequence[GpuUsage],
    compute: Compute,
    *,
    rules: UsageRules,
    now: datetime,
) -> bool:
    """Busy earlier in the window but not now. A busy peak must have a last busy sample
    inside the window; if not, the two answers disagree, and the safe reading is "busy"."""
    consistent = all(
        g.last_busy_at is not None and now - g.last_busy_at <= rules.window for g in busy
    )
    return (
        consistent
        and now - compute.since > rules.slot
        and data_problem(gpus, rules=rules, now=now) is None
    )


def _busy(
    facts: Attributed,
    busy: Sequence[GpuUsage],
    compute: Compute,
    *,
    rules: UsageRules,
    not_before: datetime,
    now: datetime,
) -> Assessment:
    """Busy, or idle-held when some of its GPUs sat idle the whole window (reported only)."""
    held = [
        g
        for g in facts.gpus
        if g not in busy and _idle_all_window(g, facts, rules=rules, not_before=not_before, now=now)
    ]
    if held:
        window = format_duration(rules.window, units="ms", split="never")
        reason = (
            f"{len(held)} of {len(facts.gpus)} GPUs idle for the whole "
            f"{window} while {len(busy)} {'is' if len(busy) == 1 else 'are'} busy"
        )
        state = State.IDLE_HELD
    else:
        peak = max(g.peak for g in busy if g.peak is not None)
        reason = f"peak utilization {peak:.0%} above threshold {rules.threshold:.0%}"
        state = State.BUSY
    return Assessment(
        state,
        reason,
        compute.peak,
        compute.coverage,
        evidence=facts.lines,
        idle_held_gpus=len(held),
    )


def _idle_all_window(
    gpu: GpuUsage, facts: Attributed, *, rules: UsageRules, not_before: datetime, now: datetime
) -> bool:
    """Good data, at or below the threshold, and neither busy nor (while loading still
    counts for it) loading since the window began."""
    if data_problem([gpu], rules=rules, now=now) is not None:
        return False
    if gpu.peak is None or gpu.peak > rules.threshold:
        return False
    since = max(not_before, gpu.last_busy_at or not_before)
    own = [s.last_at for s in facts.loading_of(gpu.key)]
    if own and now - since <= rules.max_loading:
        since = max(since, *own)
    return now - since >= rules.window
