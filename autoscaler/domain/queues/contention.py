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

With fair sharing (the queue's cohort ordered by dominant resource share,
`domain/queues/fair_sharing.py`), a waiter that fits, now or once the candidates are freed,
is admitted only if Kueue would give it that quota: the heads of the cohort's other
ClusterQueues that Kueue considers before it (lower share, ...) are admitted first, and if
that leaves it without quota it is "another head first" and nothing is freed for it. The
heads Kueue admits before it are charged too. Where that order cannot be told (a head of the
cohort whose queue is not known, admission fair sharing ordering a queue's waiters), that
waiter is "fit unknown", and only that waiter.
Not modelled without fair sharing: Kueue admits, within a cohort, the waiters that fit under
their nominal quota before those that must borrow; here the priority order alone decides.
A StrictFIFO queue's head that cannot fit blocks the waiters behind it, which this plan does
not know (QueueQuota has no queueing strategy): the adapter should mark such queues
`unmodelled`.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.domain.queues.facts import (
    FairSharingOrder,
    FlavorResource,
    QueueFacts,
    QueueQuota,
    Waiter,
)
from autoscaler.domain.queues.fair_sharing import (
    Admission,
    TurnKind,
    ordered_by_fair_sharing,
    settle,
    turn_of,
)
from autoscaler.domain.queues.fit import Fit, FitOutcome, Freed, fit, quota_of
from autoscaler.domain.tenant_names import Named, ServedFor


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
    ANOTHER_HEAD_FIRST = "another head first"  # fair sharing gives the quota to another head
    FIT_UNKNOWN = "fit unknown"


class UnknownWhy(StrEnum):
    """Why a waiter's fit is unknown, as a class (a metric label: never a name)."""

    QUEUES_UNREAD = "queues-unread"  # no data about waiters
    QUEUE_UNKNOWN = "queue-unknown"  # its ClusterQueue is not read
    QUEUE_UNMODELLED = "queue-unmodelled"  # it or a cohort member is marked unmodelled
    ORDER_UNKNOWN = "order-unknown"  # Kueue's order among the heads cannot be told


@dataclass(frozen=True)
class WaiterReport:
    """What the plan does for one waiter; `freed` is its group, taken all or nothing."""

    waiter: WorkloadRef
    cluster_queue: str
    outcome: WaiterOutcome
    reason: str
    freed: tuple[WorkloadRef, ...] = ()
    unknown_why: UnknownWhy | None = None  # set for FIT_UNKNOWN only
    others: tuple[Named, ...] = ()  # the other heads `reason` names (fair sharing's order)

    def served_for(self) -> ServedFor:
        """The outcome and why, without the names of the workloads freed for it (they may
        sit in other namespaces: `explain` of one of them shows this); the waiter and the
        heads its reason names are told per caller (domain/tenant_names.py)."""
        prefix = f"freeing {', '.join(str(ref) for ref in self.freed)}: "
        return ServedFor(
            Named(self.waiter, self.cluster_queue),
            self.outcome.value,
            self.reason.removeprefix(prefix),
            self.others,
        )


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

    def beneficiary_of(self, ref: WorkloadRef) -> Named | None:
        """The waiter `ref` is freed for, with its ClusterQueue, if any."""
        report = self._by_ref.get(ref)
        return Named(report.waiter, report.cluster_queue) if report is not None else None

    def count(self, outcome: WaiterOutcome) -> int:
        return sum(1 for report in self.waiters if report.outcome is outcome)


def plan_reclaim(candidates: Iterable[Candidate], facts: QueueFacts) -> ReclaimPlan:
    """Which idle candidates to free, each for which waiter (see the module)."""
    waiters = sorted(facts.waiters, key=lambda w: (-w.priority, w.created_at, w.ref))
    if facts.failure is not None:
        why = f"no data about waiters: {facts.failure}"
        unknown = [
            _report(w, WaiterOutcome.FIT_UNKNOWN, why, unknown_why=UnknownWhy.QUEUES_UNREAD)
            for w in waiters
        ]
        return ReclaimPlan(waiters=tuple(unknown), failure=facts.failure)
    queues = dict(facts.queues)
    idle = sorted(candidates, key=lambda c: _preference(c, facts.queues))
    reports: list[WaiterReport] = []
    reclaims: list[PlannedStop] = []
    admitted: dict[WorkloadRef, str] = {}  # charged already: no longer a head that waits
    heads = _Heads(waiters, queues)
    for waiter in waiters:
        if waiter.ref in admitted:  # a head Kueue admits ahead of a waiter judged earlier
            reports.append(_report(waiter, WaiterOutcome.FITS_ALREADY, admitted[waiter.ref]))
            continue
        own = queues.get(waiter.cluster_queue)
        fair = ordered_by_fair_sharing(own)
        rivals = heads.rivals_of(own, admitted, fair=fair)
        judged = _serve(waiter, queues, idle, rivals, facts.fair_order, fair=fair)
        reports.append(judged.report)
        reclaims.extend(PlannedStop(candidate, waiter.ref) for candidate in judged.chosen)
        if judged.chosen:
            taken = {c.ref for c in judged.chosen}
            idle = [c for c in idle if c.ref not in taken]
        for each, _ in judged.admissions:
            admitted[each.ref] = (
                f"fits already: Kueue admits it by fair sharing before {waiter.ref}"
            )
        if judged.admissions:
            queues = settle(queues, freed=_frees(judged.chosen), admissions=judged.admissions)
    by_ref = {ref: report for report in reports for ref in report.freed}
    return ReclaimPlan(tuple(reclaims), tuple(reports), _by_ref=by_ref)


@dataclass(frozen=True)
class _Judged:
    report: WaiterReport
    chosen: tuple[Candidate, ...] = ()
    admissions: tuple[Admission, ...] = ()  # what Kueue admits: heads before it, then it


def _serve(
    waiter: Waiter,
    queues: Mapping[str, QueueQuota],
    idle: Sequence[Candidate],
    rivals: Sequence[Waiter] | str,
    order: FairSharingOrder,
    *,
    fair: bool,
) -> _Judged:
    """The waiter's report, the candidates freed for it and what Kueue would admit.
    `rivals`: the other heads of a fair-sharing cohort, or why they cannot be told;
    `order`: how Kueue orders them (its feature gates); `fair`: whether it orders them."""
    now = fit(waiter, queues)
    known = _known_rivals(waiter, now, queues, rivals)
    if isinstance(known, _Judged):
        return known
    if now.fits:
        if not fair:
            reason = f"fits already, Kueue will admit it: {now.reason}"
            return _Judged(
                _report(waiter, WaiterOutcome.FITS_ALREADY, reason), (), ((waiter, now),)
            )
        judged = _fair(waiter, queues, (), known, outcome=WaiterOutcome.FITS_ALREADY, order=order)
        if judged.report.outcome is not WaiterOutcome.ANOTHER_HEAD_FIRST:
            return judged
    usable = [c for c in idle if _may_serve(c, waiter, queues)]
    everything = fit(waiter, queues, _frees(usable))
    if not everything.fits:
        why = f"{everything.reason}, even with the {len(usable)} idle workloads it may use freed"
        return _Judged(_report(waiter, WaiterOutcome.CANNOT_FIT, why))
    chosen = _fewest(waiter, queues, usable)
    if fair:
        return _fair(waiter, queues, chosen, known, outcome=WaiterOutcome.SERVED, order=order)
    after = fit(waiter, queues, _frees(chosen))
    names = ", ".join(str(c.ref) for c in chosen)
    report = _report(waiter, WaiterOutcome.SERVED, f"freeing {names}: {after.reason}", chosen)
    return _Judged(report, chosen, ((waiter, after),))


def _known_rivals(
    waiter: Waiter, now: Fit, queues: Mapping[str, QueueQuota], rivals: Sequence[Waiter] | str
) -> _Judged | Sequence[Waiter]:
    """The rival heads, or the waiter judged "fit unknown" (its queue, or Kueue's order)."""
    if now.outcome is FitOutcome.UNKNOWN:
        why = UnknownWhy.QUEUE_UNMODELLED
        if waiter.cluster_queue not in queues:
            why = UnknownWhy.QUEUE_UNKNOWN
        return _Judged(_report(waiter, WaiterOutcome.FIT_UNKNOWN, now.reason, unknown_why=why))
    if isinstance(rivals, str):
        why = UnknownWhy.ORDER_UNKNOWN
        return _Judged(_report(waiter, WaiterOutcome.FIT_UNKNOWN, rivals, unknown_why=why))
    return rivals


def _fair(
    waiter: Waiter,
    queues: Mapping[str, QueueQuota],
    chosen: tuple[Candidate, ...],
    rivals: Sequence[Waiter],
    *,
    outcome: WaiterOutcome,
    order: FairSharingOrder,
) -> _Judged:
    """The judgement in a fair-sharing cohort, once `chosen` is freed (FITS_ALREADY when
    nothing is): the waiter's turn among the cohort's heads, in Kueue's `order`."""
    turn = turn_of(waiter, settle(queues, freed=_frees(chosen)), rivals, order)
    if turn.kind is TurnKind.UNKNOWN:
        report = _report(
            waiter, WaiterOutcome.FIT_UNKNOWN, turn.reason, unknown_why=UnknownWhy.ORDER_UNKNOWN
        )
        return _Judged(report)
    freeing = f"freeing {', '.join(str(c.ref) for c in chosen)}: " if chosen else ""
    if turn.kind is TurnKind.BEHIND or turn.own is None:
        reason = f"{freeing}{turn.reason}; nothing is freed for it"
        return _Judged(_report(waiter, WaiterOutcome.ANOTHER_HEAD_FIRST, reason))
    lead = "fits already, Kueue will admit it " if not chosen else freeing
    reason = f"{lead}{turn.reason}: {turn.own.reason}"
    admissions = (*turn.ahead, (waiter, turn.own))
    ahead = tuple(Named(w.ref, w.cluster_queue) for w, _ in turn.ahead)
    return _Judged(_report(waiter, outcome, reason, chosen, others=ahead), chosen, admissions)


class _Heads:
    """The waiters, by ClusterQueue, in Kueue's order; a queue's head is its first waiter not
    admitted yet. Built once per plan: admissions only move a head forward, and a queue's
    cohort and `order_unknown` stay as they are (`settle` changes usage only)."""

    def __init__(self, waiters: Sequence[Waiter], queues: Mapping[str, QueueQuota]) -> None:
        self._queues = queues
        self._waiting: dict[str, list[tuple[int, Waiter]]] = {}  # (place in Kueue's order, …)
        for place, waiter in enumerate(waiters):
            self._waiting.setdefault(waiter.cluster_queue, []).append((place, waiter))
        self._next = dict.fromkeys(self._waiting, 0)
        self._by_cohort: dict[str, list[str]] = {}
        for name in self._waiting:
            queue = queues.get(name)
            if queue is not None and queue.cohort is not None:
                self._by_cohort.setdefault(queue.cohort, []).append(name)

    def rivals_of(
        self, own: QueueQuota | None, admitted: Container[WorkloadRef], *, fair: bool
    ) -> Sequence[Waiter] | str:
        """The heads of the other ClusterQueues of `own`'s fair-sharing cohort (`fair`), in
        Kueue's order, or why Kueue's order cannot be told."""
        if own is not None and own.order_unknown:
            return f"order of {own.name}'s waiters unknown: {'; '.join(own.order_unknown)}"
        if not fair or own is None or own.cohort is None:
            return ()
        heads = [
            head
            for name in self._by_cohort.get(own.cohort, ())
            if name != own.name and (head := self._head(name, admitted)) is not None
        ]
        heads.sort(key=lambda head: head[0])
        for _, waiter in heads:
            queue = self._queues[waiter.cluster_queue]
            if queue.order_unknown:
                why = "; ".join(queue.order_unknown)
                return f"fair-sharing order unknown: the head of {queue.name} is unknown: {why}"
        return tuple(waiter for _, waiter in heads)

    def _head(self, name: str, admitted: Container[WorkloadRef]) -> tuple[int, Waiter] | None:
        waiting, at = self._waiting[name], self._next[name]
        while at < len(waiting) and waiting[at][1].ref in admitted:
            at += 1
        self._next[name] = at
        return waiting[at] if at < len(waiting) else None


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


def _report(
    waiter: Waiter,
    outcome: WaiterOutcome,
    reason: str,
    chosen: Iterable[Candidate] = (),
    *,
    unknown_why: UnknownWhy | None = None,
    others: tuple[Named, ...] = (),
) -> WaiterReport:
    freed = tuple(c.ref for c in chosen)
    return WaiterReport(
        waiter.ref, waiter.cluster_queue, outcome, reason, freed, unknown_why, others
    )
