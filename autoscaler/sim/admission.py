"""Kueue's admission step, and the queries that explain its outcome.

`admit_pending(state, now)` is one Kueue scheduling pass, preemption included. Queue order
inside a ClusterQueue is effective priority (high first; the priority boost counts when its
gate is on), then creation time (old first); reactivated workloads keep their creation time
(kueue pkg/cache/queue/cluster_queue.go, queueOrderingFunc). Each round takes one head per
ClusterQueue: the first pending workload that fits or that preemption would make room for
(BestEffortFIFO: one that does neither is passed over, so it never blocks smaller ones behind
it) or only the very first (StrictFIFO). Across queues the heads compete as in Kueue's
scheduler (pkg/scheduler/scheduler.go, makeClassicalIterator): those that fit without
borrowing first, then effective priority, then creation time; with fair sharing on, the heads
of a cohort compete by dominant resource share instead (`fair_sharing.py`). The winner is
admitted, or, when it needs preemption, its victims are evicted (`preemption.py`) and it
waits: the victims' quota stays counted for the rest of the pass (their pods are still
stopping) together with what the preemptor reserves (scheduler.go, processEntry and
quotaResourcesToReserve), and the preemptor is admitted by a later pass. Victims are
requeued pending. The round repeats until no head is left.

A ClusterQueue without `spec.preemption` (Never, the default) never preempts: its workloads
only get quota nobody holds. A workload with a pod set that does not tolerate its queue's
flavor's taints is never a head: Kueue's flavor assigner rules the flavor out before counting
any quota, so it neither fits nor preempts (`flavors.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from autoscaler.domain.models import WorkloadRef
from autoscaler.sim.fair_sharing import dominant_resource_share
from autoscaler.sim.flavors import untolerated_message, untolerated_taint
from autoscaler.sim.kueue_model import (
    Admission,
    Event,
    EventKind,
    KueueState,
    Phase,
    Step,
    Workload,
)
from autoscaler.sim.preemption import Target, preemption_message, preemption_targets
from autoscaler.sim.quota import ClusterQueue, Ledger, QueueingStrategy, Shortfall


@dataclass(frozen=True)
class QueueUsage:
    """A ClusterQueue's quota and what its admitted workloads hold of it."""

    cluster_queue: str
    cohort: str | None
    nominal: Mapping[str, int]
    used: Mapping[str, int]  # own + borrowed
    borrowed: Mapping[str, int]  # the part of `used` beyond nominal, lent by the cohort
    available: Mapping[str, int]  # what one more workload could get, borrowing included
    admitted: int
    pending: int


def queue_order(
    workloads: Iterable[Workload], state: KueueState | None = None
) -> tuple[Workload, ...]:
    """By effective priority (as `state` computes it; plain priority without a state), then
    creation time."""
    rank = (lambda w: w.priority) if state is None else state.effective_priority
    return tuple(sorted(workloads, key=lambda w: (-rank(w), w.created_at, w.ref)))


def pending_queue(state: KueueState, cluster_queue: str) -> tuple[Workload, ...]:
    """The workloads waiting for `cluster_queue`, in the order it considers them."""
    return queue_order(state.in_phase(Phase.PENDING, cluster_queue), state)


def ledger(state: KueueState) -> Ledger:
    """Every ClusterQueue's usage from its admitted workloads."""
    book = Ledger(queues=state.cluster_queues)
    for workload in state.in_phase(Phase.ADMITTED):
        held = workload.admission
        if held is not None and held.cluster_queue in state.cluster_queues:
            book = book.charged(held.cluster_queue, held.usage)
    return book


def admit_pending(state: KueueState, now: datetime) -> Step:
    """One Kueue scheduling pass: admit what fits, best candidate first; preempt for a head
    that needs it (the preemptor waits for a later pass)."""
    book = ledger(state)
    waiting = {name: list(pending_queue(state, name)) for name in sorted(state.cluster_queues)}
    events: list[Event] = []
    victims: set[WorkloadRef] = set()
    while (chosen := _best_candidate(state, waiting, book)) is not None:
        queue = chosen.queue.name
        waiting[queue].remove(chosen.workload)
        if not chosen.targets:
            book = book.charged(queue, chosen.charge)
            state = state.with_workload(
                chosen.workload.admitted(Admission(queue, now, chosen.charge))
            )
            message = f"Admitted by ClusterQueue {queue}"
            events.append(Event(EventKind.ADMITTED, chosen.workload.ref, now, queue, message))
        elif not victims.intersection(t.workload.ref for t in chosen.targets):
            # scheduler.go, processEntry: overlapping targets are skipped for this pass.
            victims.update(t.workload.ref for t in chosen.targets)
            book = book.charged(queue, _reserved(book, chosen))
            state, issued = _issue_preemptions(state, chosen, now)
            events += issued
    return state, tuple(events)


def queue_usage(state: KueueState, cluster_queue: str) -> QueueUsage:
    """What the queue holds now (own + borrowed) and what one more workload could get."""
    book = ledger(state)
    cq = state.cluster_queues[cluster_queue]
    resources = sorted(cq.quotas)
    return QueueUsage(
        cluster_queue=cluster_queue,
        cohort=cq.cohort,
        nominal={r: cq.quotas[r].nominal for r in resources},
        used={r: book.used(cluster_queue, r) for r in resources},
        borrowed={r: book.borrowed(cluster_queue, r) for r in resources},
        available={r: book.available(cluster_queue, r) for r in resources},
        admitted=len(state.in_phase(Phase.ADMITTED, cluster_queue)),
        pending=len(state.in_phase(Phase.PENDING, cluster_queue)),
    )


def pending_reason(state: KueueState, ref: WorkloadRef) -> str | None:
    """Why a pending workload is not admitted; None when it is not pending."""
    workload = state.workload(ref)
    if workload.phase is not Phase.PENDING:
        return None
    target = _target_queue(state, workload)
    if isinstance(target, str):
        return target
    return _quota_reason(state, target, workload)


def _target_queue(state: KueueState, workload: Workload) -> ClusterQueue | str:
    """The ClusterQueue the workload waits for, or why there is none."""
    queue_name = state.cluster_queue_name(workload)
    if queue_name is None:
        return f"LocalQueue {workload.queue_name} doesn't exist"
    cq = state.cluster_queues.get(queue_name)
    return f"ClusterQueue {queue_name} doesn't exist" if cq is None else cq


def _quota_reason(state: KueueState, cq: ClusterQueue, workload: Workload) -> str:
    if uncovered := cq.uncovered(workload.requests):
        return "; ".join(f"resource {r} unavailable in ClusterQueue {cq.name}" for r in uncovered)
    if (refused := flavor_refusal(cq, workload)) is not None:
        return refused
    charge = cq.charge(workload.requests, pods=workload.pod_count)
    if gaps := ledger(state).shortfalls(cq.name, charge):
        return "; ".join(_insufficient(cq, gap) for gap in gaps)
    ahead = pending_queue(state, cq.name)[0]
    if cq.queueing_strategy is QueueingStrategy.STRICT_FIFO and ahead.ref != workload.ref:
        return f"waiting behind {ahead.ref} in StrictFIFO ClusterQueue {cq.name}"
    return "quota is available: waiting for the next admission step"


@dataclass(frozen=True)
class _Candidate:
    workload: Workload
    queue: ClusterQueue
    charge: Mapping[str, int]
    borrows: bool
    targets: tuple[Target, ...] = ()  # non-empty: it needs these preempted first
    shortfall: str = ""  # Kueue's assignment message when it needs preemption


def _best_candidate(
    state: KueueState, waiting: Mapping[str, list[Workload]], book: Ledger
) -> _Candidate | None:
    heads = [
        head
        for name, queue in waiting.items()
        if (head := _head(state, state.cluster_queues[name], queue, book)) is not None
    ]
    if state.features.fair_sharing:
        return _fair_sharing_pick(state, heads, book)
    return min(
        heads,
        key=lambda c: (
            c.borrows,
            -state.effective_priority(c.workload),
            c.workload.created_at,
            c.workload.ref,
        ),
        default=None,
    )


def _fair_sharing_pick(
    state: KueueState, heads: list[_Candidate], book: Ledger
) -> _Candidate | None:
    """pkg/scheduler/fair_sharing_iterator.go, pop: a queue outside any cohort goes as it
    comes (here: by name); a cohort's heads meet in a tournament (runTournament, entryComparer
    .less): not borrowing on a requested resource first (FairSharingPrioritizeNonBorrowing, on
    by default), then the lower dominant resource share with the head's usage added, then
    effective priority, then creation time."""
    if not heads:
        return None
    first = heads[0]
    if first.queue.cohort is None:
        return first
    rivals = [c for c in heads if c.queue.cohort == first.queue.cohort]

    def rank(c: _Candidate) -> tuple[bool, tuple[int, float], int, datetime]:
        share = dominant_resource_share(book, c.queue, c.charge)
        return (
            share.borrowing_on(c.charge),
            share.sort_key,
            -state.effective_priority(c.workload),
            c.workload.created_at,
        )

    return min(rivals, key=rank)  # the first of equals, as the tournament keeps it


def _head(
    state: KueueState, cq: ClusterQueue, waiting: list[Workload], book: Ledger
) -> _Candidate | None:
    for workload in waiting:
        candidate = _fitting(state, cq, book, workload)
        if candidate is not None or cq.queueing_strategy is QueueingStrategy.STRICT_FIFO:
            return candidate
    return None


def _fitting(
    state: KueueState, cq: ClusterQueue, book: Ledger, workload: Workload
) -> _Candidate | None:
    if cq.uncovered(workload.requests) or flavor_refusal(cq, workload) is not None:
        return None
    charge = cq.charge(workload.requests, pods=workload.pod_count)
    borrows = book.needs_borrowing(cq.name, charge)
    gaps = book.shortfalls(cq.name, charge)
    if not gaps:
        return _Candidate(workload, cq, charge, borrows)
    targets = preemption_targets(state, book, preemptor=workload, cq=cq, charge=charge)
    if not targets:
        return None
    return _Candidate(
        workload, cq, charge, borrows, targets, _assignment_message(cq, workload, gaps)
    )


def flavor_refusal(cq: ClusterQueue, workload: Workload) -> str | None:
    """Why Kueue assigns the queue's flavor to none of the workload's pod sets; None when
    every pod set tolerates its taints (flavorassigner.go, checkFlavorForPodSets, pod sets in
    order; the message as Assignment.Message words it)."""
    for pod_set in workload.pod_sets:
        tolerations = (*pod_set.tolerations, *cq.flavor_tolerations)
        taint = untolerated_taint(cq.flavor_taints, tolerations)
        if taint is not None:
            why = untolerated_message(taint, cq.flavor)
            return f"couldn't assign flavors to pod set {pod_set.name}: {why}"
    return None


def _reserved(book: Ledger, chosen: _Candidate) -> dict[str, int]:
    """What a preemptor holds back while its victims go (scheduler.go,
    quotaResourcesToReserve): up to its nominal quota, or up to its borrowing limit when it
    borrows."""
    name, quotas = chosen.queue.name, chosen.queue.quotas
    reserved = {}
    for resource, amount in chosen.charge.items():
        quota, used = quotas[resource], book.used(name, resource)
        if chosen.borrows:
            limit = quota.borrowing_limit
            reserved[resource] = (
                amount if limit is None else min(amount, quota.nominal + limit - used)
            )
        else:
            reserved[resource] = max(0, min(amount, quota.nominal - used))
    return reserved


def _issue_preemptions(state: KueueState, chosen: _Candidate, now: datetime) -> Step:
    """preemption.go, IssuePreemptions: each target evicted (and requeued); the preemptor
    waits, its QuotaReserved message saying how many (scheduler.go, markPreemptionOutcome)."""
    events: list[Event] = []
    for target in chosen.targets:
        message = preemption_message(state, chosen.workload, target)
        state, issued = state.preempt(
            target.workload.ref, reason=target.reason, message=message, now=now
        )
        events += issued
    waiting = f"{chosen.shortfall}. Pending the preemption of {len(chosen.targets)} workload(s)"
    return state.with_workload(replace(chosen.workload, awaiting_preemption=waiting)), tuple(events)


def _assignment_message(cq: ClusterQueue, workload: Workload, gaps: tuple[Shortfall, ...]) -> str:
    """flavorassigner.go, Assignment.Message and fitsResourceQuota's Preempt status (this
    model assigns all pod sets together: the first pod set is named)."""
    pod_set = workload.pod_sets[0].name if workload.pod_sets else "main"
    reasons = sorted(
        f"insufficient unused quota for {gap.resource} in flavor {cq.flavor}, "
        f"{_quantity(gap.resource, gap.missing)} more needed"
        for gap in gaps
    )
    return f"couldn't assign flavors to pod set {pod_set}: {', '.join(reasons)}"


def _quantity(resource: str, amount: int) -> str:
    if resource == "cpu" and amount % 1000:
        return f"{amount}m"
    return str(amount // 1000 if resource == "cpu" else amount)


def _insufficient(cq: ClusterQueue, gap: Shortfall) -> str:
    where = f"ClusterQueue {cq.name}" + ("" if cq.cohort is None else f" (cohort {cq.cohort})")
    return (
        f"insufficient quota for {gap.resource} in {where}: needs {gap.needed}, "
        f"{gap.available} available, {gap.missing} more needed"
    )
