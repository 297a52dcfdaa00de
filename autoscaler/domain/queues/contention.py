"""Reclaim only where someone waits (issue 14's `when-contended` mode): which idle workloads to
free, each for which waiting Workload.

What the engine calls, and what it gets back:

    candidate_of(info, idle_since=...) -> Candidate | None   # an idle, admitted workload
    plan_reclaim(candidates, facts) -> ReclaimPlan
    plan.beneficiary_of(ref)   # the waiter a candidate is freed for; None: leave it running
    plan.waiters               # one WaiterReport per waiter, to log (and count "fit unknown")

Waiters are taken in Kueue's order (priority, then creation time). For each, with the fit of
`domain/queues/fit.py`:
- it fits already: nothing is freed (Kueue will admit it) and its admission is charged to
  the simulated quota before the next waiter;
- fit unknown (its queue or a cohort member cannot be modelled, or its queue is not known):
  nothing is freed for it;
- it does not fit even with every idle workload it may use freed: nothing is freed for it;
- else the idle workloads of its ClusterQueue, and of its cohort's queues, are added in the
  order below until it fits; then any it still fits without is dropped, so no more is freed
  than it needs. They serve this waiter only, and its admission is charged.
Candidate order: workloads of ClusterQueues borrowing beyond their nominal quota (in a
(flavor, resource) the workload uses) first, then the lowest priority, the longest idle, the
fewest GPUs. No data about waiters (`facts.failure`) frees nothing and makes every waiter
"fit unknown": it is never "nobody waits", nor "someone waits".

Not modelled: Kueue admits, within a cohort, the waiters that fit under their nominal quota
before those that must borrow; here the priority order alone decides who is served first.
A StrictFIFO queue's head that cannot fit blocks the waiters behind it, which this plan does
not know (QueueQuota has no queueing strategy): the adapter should mark such queues
`unmodelled`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum

from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.domain.queues.facts import FlavorResource, QueueFacts, QueueQuota, Waiter
from autoscaler.domain.queues.fit import Fit, FitOutcome, Freed, fit, quota_of


@dataclass(frozen=True)
class Candidate:
    """An idle admitted workload that could be freed, and what its admission charges."""

    ref: WorkloadRef
    uid: str
    cluster_queue: str
    cohort: str | None
    priority: int
    idle_since: datetime
    gpus: int
    usage: Mapping[FlavorResource, int]


def candidate_of(info: WorkloadInfo, *, idle_since: datetime) -> Candidate | None:
    """The workload as a reclaim candidate; None when its ClusterQueue is not known."""
    if info.cluster_queue is None:
        return None
    return Candidate(
        ref=info.ref,
        uid=info.uid,
        cluster_queue=info.cluster_queue,
        cohort=info.cohort,
        priority=info.priority,
        idle_since=idle_since,
        gpus=info.gpus,
        usage=info.admitted_usage,
    )


class WaiterOutcome(StrEnum):
    SERVED = "served"
    FITS_ALREADY = "fits already"
    CANNOT_FIT = "cannot fit"
    FIT_UNKNOWN = "fit unknown"


@dataclass(frozen=True)
class WaiterReport:
    """What the plan does for one waiter; `freed` is its group, taken all or nothing."""

    waiter: WorkloadRef
    cluster_queue: str
    outcome: WaiterOutcome
    reason: str
    freed: tuple[WorkloadRef, ...] = ()


@dataclass(frozen=True)
class PlannedStop:
    """An idle workload the plan frees, and the waiter it is freed for."""

    candidate: Candidate
    beneficiary: WorkloadRef


@dataclass(frozen=True)
class ReclaimPlan:
    reclaims: tuple[PlannedStop, ...] = ()  # in the waiters' order
    waiters: tuple[WaiterReport, ...] = ()  # in Kueue's order
    failure: str | None = None  # no data about waiters: nothing is freed
    _by_ref: Mapping[WorkloadRef, WaiterReport] = field(default_factory=dict, repr=False)

    def beneficiary_of(self, ref: WorkloadRef) -> WorkloadRef | None:
        report = self._by_ref.get(ref)
        return report.waiter if report is not None else None

    def count(self, outcome: WaiterOutcome) -> int:
        return sum(1 for report in self.waiters if report.outcome is outcome)


def plan_reclaim(candidates: Iterable[Candidate], facts: QueueFacts) -> ReclaimPlan:
    """Which idle candidates to free, each for which waiter (see the module)."""
    waiters = sorted(facts.waiters, key=lambda w: (-w.priority, w.created_at, w.ref))
    if facts.failure is not None:
        why = f"no data about waiters: {facts.failure}"
        unknown = [_report(w, WaiterOutcome.FIT_UNKNOWN, why) for w in waiters]
        return ReclaimPlan(waiters=tuple(unknown), failure=facts.failure)
    queues = dict(facts.queues)
    idle = sorted(candidates, key=lambda c: _preference(c, facts.queues))
    reports: list[WaiterReport] = []
    reclaims: list[PlannedStop] = []
    for waiter in waiters:
        report, chosen, admitted = _serve(waiter, queues, idle)
        reports.append(report)
        reclaims.extend(PlannedStop(candidate, waiter.ref) for candidate in chosen)
        taken = {c.ref for c in chosen}
        idle = [c for c in idle if c.ref not in taken]
        if admitted is not None:
            queues = _settle(queues, freed=_frees(chosen), waiter=waiter, admitted=admitted)
    by_ref = {ref: report for report in reports for ref in report.freed}
    return ReclaimPlan(tuple(reclaims), tuple(reports), _by_ref=by_ref)


def _serve(
    waiter: Waiter, queues: Mapping[str, QueueQuota], idle: Sequence[Candidate]
) -> tuple[WaiterReport, tuple[Candidate, ...], Fit | None]:
    """The waiter's report, the candidates freed for it and, when Kueue would admit it, its fit."""
    now = fit(waiter, queues)
    if now.outcome is FitOutcome.UNKNOWN:
        return _report(waiter, WaiterOutcome.FIT_UNKNOWN, now.reason), (), None
    if now.fits:
        reason = f"fits already, Kueue will admit it: {now.reason}"
        return _report(waiter, WaiterOutcome.FITS_ALREADY, reason), (), now
    usable = [c for c in idle if _may_serve(c, waiter, queues)]
    everything = fit(waiter, queues, _frees(usable))
    if not everything.fits:
        why = f"{everything.reason}, even with the {len(usable)} idle workloads it may use freed"
        return _report(waiter, WaiterOutcome.CANNOT_FIT, why), (), None
    chosen = _fewest(waiter, queues, usable)
    after = fit(waiter, queues, _frees(chosen))
    names = ", ".join(str(c.ref) for c in chosen)
    report = _report(waiter, WaiterOutcome.SERVED, f"freeing {names}: {after.reason}", chosen)
    return report, chosen, after


def _fewest(
    waiter: Waiter, queues: Mapping[str, QueueQuota], usable: Sequence[Candidate]
) -> tuple[Candidate, ...]:
    """The first candidates, in order, that let the waiter in; then without any not needed.

    Fit only grows as more is freed, so one pass leaves no candidate the waiter fits without."""
    chosen: list[Candidate] = []
    for candidate in usable:
        chosen.append(candidate)
        if fit(waiter, queues, _frees(chosen)).fits:
            break
    for candidate in reversed(list(chosen)):
        rest = [c for c in chosen if c is not candidate]
        if fit(waiter, queues, _frees(rest)).fits:
            chosen = rest
    return tuple(chosen)


def _may_serve(candidate: Candidate, waiter: Waiter, queues: Mapping[str, QueueQuota]) -> bool:
    """Same ClusterQueue, or a ClusterQueue of the same cohort (whose lending the fit weighs)."""
    if candidate.cluster_queue == waiter.cluster_queue:
        return True
    own, theirs = queues.get(waiter.cluster_queue), queues.get(candidate.cluster_queue)
    return (
        own is not None
        and theirs is not None
        and own.cohort is not None
        and theirs.cohort == own.cohort
    )


def _preference(candidate: Candidate, queues: Mapping[str, QueueQuota]) -> tuple[object, ...]:
    queue = queues.get(candidate.cluster_queue)
    borrower = queue is not None and any(
        queue.usage.get(key, 0) > quota.nominal
        for key in candidate.usage
        if (quota := quota_of(queue, key)) is not None
    )
    return (not borrower, candidate.priority, candidate.idle_since, candidate.gpus, candidate.ref)


def _frees(chosen: Iterable[Candidate]) -> Freed:
    freed: dict[str, dict[FlavorResource, int]] = {}
    for candidate in chosen:
        queue = freed.setdefault(candidate.cluster_queue, {})
        for key, qty in candidate.usage.items():
            queue[key] = queue.get(key, 0) + qty
    return freed


def _settle(
    queues: Mapping[str, QueueQuota], *, freed: Freed, waiter: Waiter, admitted: Fit
) -> dict[str, QueueQuota]:
    """The quotas once the freed workloads are gone and Kueue has admitted the waiter."""
    charges: dict[str, Mapping[FlavorResource, int]] = {waiter.cluster_queue: admitted.charge()}
    settled = dict(queues)
    for name in set(freed) | set(charges):
        queue = queues.get(name)
        if queue is None:
            continue
        usage = dict(queue.usage)
        for key, qty in freed.get(name, {}).items():
            usage[key] = max(0, usage.get(key, 0) - qty)
        for key, qty in charges.get(name, {}).items():
            usage[key] = usage.get(key, 0) + qty
        settled[name] = replace(queue, usage=usage)
    return settled


def _report(
    waiter: Waiter, outcome: WaiterOutcome, reason: str, chosen: Iterable[Candidate] = ()
) -> WaiterReport:
    freed = tuple(c.ref for c in chosen)
    return WaiterReport(waiter.ref, waiter.cluster_queue, outcome, reason, freed)
