"""Weighing the evidence signals once compute has stopped: Ray tasks (use), a failed signal
(unknown), loading (activity, for at most `max_loading`), or idle since when.

Loading is device activity at near-zero compute: framebuffer growing, power over the
model's idle baseline, PCIe or NVLink receiving. A loading episode starts at its first
sighting since compute stopped (or the workload started). For `max_loading` from that start
it counts as activity: current loading is LOADING, and past loading moves "idle since" like a
busy sample. Beyond it the workload has been "loading for over `max_loading` without
compute": the verdict is judged on compute alone, and says so; the evidence is still
reported. The evidence reads reach back over the longest `max_loading`, so the start is seen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime

from autoscaler.domain.durations import format_duration
from autoscaler.domain.models import State, WorkloadInfo
from autoscaler.domain.usage.assessment import (
    Assessment,
    Compute,
    UsageRules,
    clock,
    current,
)
from autoscaler.domain.usage.attribution import Attributed
from autoscaler.domain.usage.evidence import Sighting, Signal


def weigh(
    workload: WorkloadInfo,
    facts: Attributed,
    compute: Compute,
    *,
    failures: Mapping[Signal, str],
    rules: UsageRules,
    now: datetime,
) -> Assessment:
    task = _newest(facts.use)
    if task is not None and current(task, rules=rules, now=now):
        return _verdict(State.BUSY, f"Ray tasks executing: {task.detail}", compute, facts)
    failed = failure_covering(workload, failures)
    if failed is not None:
        return _verdict(State.UNKNOWN, failed, compute, facts)
    return _loading_or_idle(facts, compute, rules=rules, now=now)


def _loading_or_idle(
    facts: Attributed, compute: Compute, *, rules: UsageRules, now: datetime
) -> Assessment:
    """Loading since compute stopped counts for `max_loading` from the episode's start."""
    after = [s for _, s in facts.loading if s.last_at > compute.since]
    newest = _newest(after)
    if newest is None:
        # Loading that begins from here on starts an episode of its own: it would count.
        verdict = idle(compute, facts, since=compute.since, rules=rules, now=now)
        return replace(verdict, loading_counts_until=now + rules.max_loading)
    started = max(compute.since, min(s.first_at for s in after))
    counts_until = started + rules.max_loading
    if now > counts_until:
        judged = replace(
            idle(compute, facts, since=compute.since, rules=rules, now=now),
            loading_counts_until=counts_until,
        )
        if now - newest.last_at >= rules.window:
            return judged  # loading long past: it would not have moved the verdict anyway
        longest = format_duration(rules.max_loading, units="ms", split="never")
        over = f"loading for over {longest} without compute"
        return replace(
            judged, reason=f"{over} ({newest.detail}); judged on compute: {judged.reason}"
        )
    if current(newest, rules=rules, now=now):
        reason = f"loading since {clock(started)}: {newest.detail}"
        return replace(
            _verdict(State.LOADING, reason, compute, facts), loading_counts_until=counts_until
        )
    since = min(newest.last_at, now)
    counted = f"last loading at {clock(newest.last_at)}: {newest.detail}"
    verdict = idle(compute, facts, since=since, rules=rules, now=now, counted_from=counted)
    return replace(verdict, loading_counts_until=counts_until)


def failure_covering(workload: WorkloadInfo, failures: Mapping[Signal, str]) -> str | None:
    """A failed signal covers the owner kinds of its row (a device signal: every workload;
    Ray: RayClusters and RayJobs)."""
    owner = workload.owner
    for signal in sorted(failures):
        covers = signal.row.covers
        if covers is None or (owner is not None and owner.kind in covers):
            return f"evidence signal {signal.value} failed: {failures[signal]}"
    return None


def idle(
    compute: Compute,
    facts: Attributed,
    *,
    since: datetime,
    rules: UsageRules,
    now: datetime,
    counted_from: str = "admission, pod start or last activity",
) -> Assessment:
    idle_for = now - since
    idled = format_duration(idle_for, units="ms", split="never")
    window = format_duration(rules.window, units="ms", split="never")
    peak_text = f"{compute.peak:.0%}" if compute.peak is not None else "n/a"
    # Until the window completes, the reason says how long so far and what it needs: the
    # window's peak is the busy stretch before the idle one, which explains nothing of "idle".
    if compute.recently_busy:
        reason = f"idle for {idled} so far, since last above {rules.threshold:.0%}; needs {window}"
    elif idle_for >= rules.window:
        reason = (
            f"idle for the whole window: every GPU at or below {rules.threshold:.0%} "
            f"for {window} (peak {peak_text}, coverage {compute.coverage:.0%})"
        )
    else:
        reason = f"idle for {idled} so far; needs {window} (counting from {counted_from})"
    return Assessment(
        State.IDLE,
        reason,
        compute.peak,
        compute.coverage,
        idle_since=since,
        idle_for=idle_for,
        evidence=facts.lines,
    )


def _verdict(state: State, reason: str, compute: Compute, facts: Attributed) -> Assessment:
    return Assessment(state, reason, compute.peak, compute.coverage, evidence=facts.lines)


def _newest(sightings: list[Sighting] | tuple[Sighting, ...]) -> Sighting | None:
    return max(sightings, key=lambda s: s.last_at, default=None)
