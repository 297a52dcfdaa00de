"""Kueue's admission step, and the queries that explain its outcome.

Queue order inside a ClusterQueue is priority (high first), then creation time (old first);
reactivated workloads keep their creation time. Each round takes one head per ClusterQueue:
the first pending workload that fits (BestEffortFIFO: one that does not fit is passed over, so
it never blocks smaller ones behind it) or only the very first (StrictFIFO). Across queues the
heads compete as in Kueue's scheduler: those that fit without borrowing first, then priority,
then creation time. The winner is admitted and the round repeats until no head fits.

There is no preemption: a workload only gets quota nobody holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from autoscaler.domain.models import WorkloadRef
from autoscaler.sim.kueue_model import (
    Admission,
    Event,
    EventKind,
    KueueState,
    Phase,
    Step,
    Workload,
)
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


def queue_order(workloads: Iterable[Workload]) -> tuple[Workload, ...]:
    return tuple(sorted(workloads, key=lambda w: (-w.priority, w.created_at, w.ref)))


def pending_queue(state: KueueState, cluster_queue: str) -> tuple[Workload, ...]:
    """The workloads waiting for `cluster_queue`, in the order it considers them."""
    return queue_order(state.in_phase(Phase.PENDING, cluster_queue))


def ledger(state: KueueState) -> Ledger:
    """Every ClusterQueue's usage from its admitted workloads."""
    book = Ledger(queues=state.cluster_queues)
    for workload in state.in_phase(Phase.ADMITTED):
        held = workload.admission
        if held is not None and held.cluster_queue in state.cluster_queues:
            book = book.charged(held.cluster_queue, held.usage)
    return book


def admit_pending(state: KueueState, now: datetime) -> Step:
    """Admit every pending active workload that fits, best candidate first."""
    book = ledger(state)
    waiting = {name: list(pending_queue(state, name)) for name in sorted(state.cluster_queues)}
    admitted: list[Workload] = []
    events: list[Event] = []
    while (chosen := _best_candidate(state, waiting, book)) is not None:
        queue = chosen.queue.name
        waiting[queue].remove(chosen.workload)
        book = book.charged(queue, chosen.charge)
        admitted.append(chosen.workload.admitted(Admission(queue, now, chosen.charge)))
        message = f"Admitted by ClusterQueue {queue}"
        events.append(Event(EventKind.ADMITTED, chosen.workload.ref, now, queue, message))
    return state.with_workloads(admitted), tuple(events)


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


def _best_candidate(
    state: KueueState, waiting: Mapping[str, list[Workload]], book: Ledger
) -> _Candidate | None:
    heads = (_head(state.cluster_queues[name], queue, book) for name, queue in waiting.items())
    return min(
        (head for head in heads if head is not None),
        key=lambda c: (c.borrows, -c.workload.priority, c.workload.created_at, c.workload.ref),
        default=None,
    )


def _head(cq: ClusterQueue, waiting: list[Workload], book: Ledger) -> _Candidate | None:
    for workload in waiting:
        candidate = _fitting(cq, book, workload)
        if candidate is not None or cq.queueing_strategy is QueueingStrategy.STRICT_FIFO:
            return candidate
    return None


def _fitting(cq: ClusterQueue, book: Ledger, workload: Workload) -> _Candidate | None:
    if cq.uncovered(workload.requests):
        return None
    charge = cq.charge(workload.requests, pods=workload.pod_count)
    if book.shortfalls(cq.name, charge):
        return None
    return _Candidate(workload, cq, charge, book.needs_borrowing(cq.name, charge))


def _insufficient(cq: ClusterQueue, gap: Shortfall) -> str:
    where = f"ClusterQueue {cq.name}" + ("" if cq.cohort is None else f" (cohort {cq.cohort})")
    return (
        f"insufficient quota for {gap.resource} in {where}: needs {gap.needed}, "
        f"{gap.available} available, {gap.missing} more needed"
    )
