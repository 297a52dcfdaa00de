"""What the service's deactivations saved and cost, from the durable audit trail and the latest
snapshot: pure, `now` and the period's start are arguments. Every figure is defined in
docs/SAVINGS.md; in short, over the period [since, now]:

- GPU-hours held idle: GPUs × time idle before our deactivation (from the idle episode's
  start), plus the workloads idle now × time idle so far;
- GPU-hours held not running: the same, for quota held without work (admitted, no GPU pod
  running: the `not-running` class), counted from the admission or reactivation;
- GPU-hours reclaimed: GPUs × time from our deactivation until the workload was active again
  (its owner reactivated it) or gone (its owner deleted it), or until now;
- queue wait shortened: for each waiter that followed a stop (admitted into the quota it
  freed), how much sooner it was admitted than it would otherwise have been (domain/audit/
  waits.py, the one definition; bigger is better, "at least" while the stopped workload was
  not seen ending); waiters admitted: those waiters, each once;
- regretted: our deactivations undone within an hour; contested: the workloads marked so;
- requeues, apart from the lasting stops: a stop of a kind whose stop is a requeue (its row's
  `stop_lasts` is False: Kueue's pod integration deletes the pods and the owner's new pods
  queue again as a new Workload) is counted in `requeues`, not `deactivations`, and its
  GPUs × time from the stop until the owner was admitted again (a Workload of the same owner
  admitted later, as the snapshot says), or stopped again, or until now, in GPU-hours
  requeued (handed to the queue while it waited again), not reclaimed.

Figures are grouped by the deactivated workload's namespace, LocalQueue and owner, as its
records say (a record without them, from before they were kept, falls back to the snapshot,
then to "?"). What is not known counts as nothing: no idle episode start, no GPUs held idle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from autoscaler.domain.audit.records import BEGUN, DONE, LOOP_ACTOR, AuditRecord
from autoscaler.domain.audit.subjects import Subject, owner_text
from autoscaler.domain.audit.waits import WaitShortened, seen_ended, stop_key, waits_shortened
from autoscaler.domain.models import Action, State, WorkloadRef, WorkloadStatus
from autoscaler.domain.outcomes import OutcomeKind
from autoscaler.domain.policy.owner_words import stop_lasts
from autoscaler.domain.policy.owners import KNOWN_OWNERS, OwnerKind
from autoscaler.domain.usage.assessment import held_class

SEEN_REACTIVATED = "seen-reactivated"  # the loop saw a deactivated workload active again
REACTIVATED = ("reactivate", "undone", SEEN_REACTIVATED)  # a person's, or one the loop saw
CONTESTED = "contested"
REGRET_WITHIN = timedelta(hours=1)
UNKNOWN = "?"
_BEGUN = (BEGUN, DONE, OutcomeKind.UNKNOWN.value)  # applied, or may have been
_HOUR = 3600.0


@dataclass(frozen=True, order=True)
class Group:
    namespace: str
    queue: str = UNKNOWN  # the LocalQueue
    owner: str = UNKNOWN  # "Kind/name"


@dataclass(frozen=True)
class Figures:
    held_idle_gpu_hours: float = 0.0
    held_not_running_gpu_hours: float = 0.0
    reclaimed_gpu_hours: float = 0.0
    wait_shortened: timedelta = timedelta(0)  # bigger is better (domain/audit/waits.py)
    wait_shortened_at_least: bool = False  # some waiter's figure is a lower bound
    waiters_admitted: int = 0
    deactivations: int = 0
    regretted: int = 0
    contested: int = 0
    requeues: int = 0  # stops that are requeues (the kind's `stop_lasts` False)
    requeued_gpu_hours: float = 0.0  # their GPUs × time until the owner was admitted again

    def __add__(self, other: Figures) -> Figures:
        return Figures(
            held_idle_gpu_hours=self.held_idle_gpu_hours + other.held_idle_gpu_hours,
            held_not_running_gpu_hours=self.held_not_running_gpu_hours
            + other.held_not_running_gpu_hours,
            reclaimed_gpu_hours=self.reclaimed_gpu_hours + other.reclaimed_gpu_hours,
            wait_shortened=self.wait_shortened + other.wait_shortened,
            wait_shortened_at_least=self.wait_shortened_at_least or other.wait_shortened_at_least,
            waiters_admitted=self.waiters_admitted + other.waiters_admitted,
            deactivations=self.deactivations + other.deactivations,
            regretted=self.regretted + other.regretted,
            contested=self.contested + other.contested,
            requeues=self.requeues + other.requeues,
            requeued_gpu_hours=self.requeued_gpu_hours + other.requeued_gpu_hours,
        )


@dataclass(frozen=True)
class Savings:
    since: datetime
    until: datetime
    by_owner: Mapping[Group, Figures] = field(default_factory=dict)

    def by(self, level: Callable[[Group], Group]) -> dict[Group, Figures]:
        """Rolled up, e.g. `by(per_queue)`."""
        rolled: dict[Group, Figures] = {}
        for group, figures in self.by_owner.items():
            key = level(group)
            rolled[key] = rolled.get(key, Figures()) + figures
        return dict(sorted(rolled.items()))

    @property
    def total(self) -> Figures:
        return sum(self.by_owner.values(), Figures())


def per_namespace(group: Group) -> Group:
    return Group(group.namespace, queue="", owner="")


def per_queue(group: Group) -> Group:
    return Group(group.namespace, queue=group.queue, owner="")


@dataclass(frozen=True)
class Deactivation:
    """One deactivation of ours that applied (or may have: its answer was lost)."""

    target: WorkloadRef
    at: datetime
    gpus: int
    subject: Subject | None


def our_deactivations(trail: Iterable[AuditRecord]) -> list[Deactivation]:
    """The loop's deactivations, oldest first, less those a follow-up says were not done.
    A deactivation is one (target, time), however many records speak of it: a lost answer
    has the deed, its "unknown" follow-up and later the settling "done"; the deed's record
    (the one with a subject) stands for it."""
    records = list(trail)
    not_done = {(r.target, r.at) for r in records if _is_ours(r) and _word(r) not in _BEGUN}
    begun: dict[tuple[str, datetime], AuditRecord] = {}
    for r in records:
        key = (r.target, r.at)
        counts = _is_ours(r) and _word(r) in _BEGUN and key not in not_done
        if counts and (key not in begun or begun[key].subject is None):
            begun[key] = r
    found = [
        Deactivation(ref, r.at, r.gpus or 0, r.subject)
        for r in begun.values()
        if (ref := WorkloadRef.parse(r.target)) is not None
    ]
    return sorted(found, key=lambda d: (d.at, d.target))


@dataclass(frozen=True)
class StopFigures:
    """One stop of ours and what it counts: the demo's summary names each, the report adds
    them up (with the workloads idle now and the contested marks)."""

    stop: Deactivation
    group: Group
    figures: Figures
    requeue: bool  # its kind's stop is a requeue: GPU-hours requeued, not reclaimed
    waits: tuple[WaitShortened, ...]  # the waiters that followed it, admitted in the period


def stops(
    trail: Sequence[AuditRecord],
    workloads: Sequence[WorkloadStatus],
    *,
    since: datetime,
    now: datetime,
    kinds: Mapping[str, OwnerKind] = KNOWN_OWNERS,
) -> list[StopFigures]:
    """Each of our stops with its figures over [since, now], oldest first; a stop that counts
    nothing in the period is left out."""
    rows = {row.ref: row for row in workloads}
    return _stops(trail, our_deactivations(trail), rows, since=since, now=now, kinds=kinds)


def _stops(
    trail: Sequence[AuditRecord],
    ours: Sequence[Deactivation],
    rows: Mapping[WorkloadRef, WorkloadStatus],
    *,
    since: datetime,
    now: datetime,
    kinds: Mapping[str, OwnerKind],
) -> list[StopFigures]:
    """`stops`, given the trail's deactivations (`our_deactivations`) and the rows by ref."""
    waits: dict[tuple[str, datetime], list[WaitShortened]] = {}
    for wait in waits_shortened(trail, now=now):
        if since <= wait.admitted_at <= now:
            waits.setdefault(stop_key(wait.stopped, wait.stopped_at), []).append(wait)
    ended = seen_ended(trail)
    groups = [_group(d.target, d.subject, rows) for d in ours]
    queued_again = _queued_again(zip(ours, groups, strict=True), rows)
    returns = _returns(ours, trail)
    found = []
    for d, group in zip(ours, groups, strict=True):
        requeue = not stop_lasts(group.owner, kinds=kinds)
        figures = (
            _of_requeue(d, group, queued_again, since=since, now=now)
            if requeue
            else _of_deactivation(d, returns, ended=ended, since=since, now=now)
        )
        followed = tuple(waits.get(stop_key(d.target, d.at), ()))
        figures += _of_waits(followed)
        if figures != Figures():
            found.append(StopFigures(d, group, figures, requeue, followed))
    return found


def savings(
    trail: Sequence[AuditRecord],
    workloads: Sequence[WorkloadStatus],
    *,
    since: datetime,
    now: datetime,
    namespace: str | None = None,
    kinds: Mapping[str, OwnerKind] = KNOWN_OWNERS,
) -> Savings:
    """The figures over [since, now], per (namespace, queue, owner); one namespace if named.
    `kinds`: the owner kinds' table, whose `stop_lasts` tells a requeue from a lasting stop."""
    rows = {row.ref: row for row in workloads}
    ours = our_deactivations(trail)
    found: dict[Group, Figures] = {}
    parts = [
        *(
            (stop.group, stop.figures)
            for stop in _stops(trail, ours, rows, since=since, now=now, kinds=kinds)
        ),
        *(_of_idle_now(row, since=since, now=now) for row in workloads),
        *(_of_contest(r, ours, rows, since=since, now=now) for r in trail),
    ]
    for group, figures in (part for part in parts if part is not None):
        if namespace is None or group.namespace == namespace:
            found[group] = found.get(group, Figures()) + figures
    return Savings(since=since, until=now, by_owner=dict(sorted(found.items())))


def _of_waits(followed: Sequence[WaitShortened]) -> Figures:
    return Figures(
        wait_shortened=sum((w.by for w in followed), timedelta(0)),
        wait_shortened_at_least=any(w.at_least for w in followed),
        waiters_admitted=len(followed),
    )


def _of_deactivation(
    deactivation: Deactivation,
    returns: Mapping[str, list[tuple[datetime, bool]]],
    *,
    ended: Mapping[tuple[str, datetime], datetime],
    since: datetime,
    now: datetime,
) -> Figures:
    """`ended`: when each stop's workload was seen gone (`seen_ended`), its GPUs no longer
    ours to reclaim; `returns`: active again (`_returns`), the first time after the stop."""
    d = deactivation
    seen = returns.get(str(d.target), ())
    back = min(
        (at for at, reactivated in seen if at > d.at or (reactivated and at == d.at)), default=None
    )
    gone = ended.get(stop_key(d.target, d.at))
    until = min(moment for moment in (back, gone, now) if moment is not None)
    figures = _held_before(d, since=since, now=now)
    return replace(
        figures,
        reclaimed_gpu_hours=d.gpus * _overlap(d.at, until, since=since, now=now),
        deactivations=int(since <= d.at <= now),
        regretted=int(since <= d.at <= now and back is not None and back - d.at <= REGRET_WITHIN),
    )


def _queued_again(
    ours: Iterable[tuple[Deactivation, Group]], rows: Mapping[WorkloadRef, WorkloadStatus]
) -> dict[tuple[str, str], list[datetime]]:
    """When each owner (namespace, owner) queued a Workload again, as far as known: our
    later stops of it and the admissions of its Workloads read now. An unknown owner is left
    out: no Workload of it is known to be the same owner's."""
    found: dict[tuple[str, str], list[datetime]] = {}
    stopped = ((group, d.at) for d, group in ours)
    admitted = (
        (_group(ref, None, rows), row.info.admitted_at)
        for ref, row in rows.items()
        if row.info.admitted_at is not None
    )
    for group, at in (*stopped, *admitted):
        if group.owner != UNKNOWN:
            found.setdefault((group.namespace, group.owner), []).append(at)
    return found


def _of_requeue(
    deactivation: Deactivation,
    group: Group,
    queued_again: Mapping[tuple[str, str], Sequence[datetime]],
    *,
    since: datetime,
    now: datetime,
) -> Figures:
    """A stop that is a requeue: its GPUs went to the queue until the owner's new Workload was
    admitted (the same owner, whatever Workload and LocalQueue its pods queue in); the
    GPU-hours held before it count as for any stop."""
    d = deactivation
    figures = _held_before(d, since=since, now=now)
    again = [at for at in queued_again.get((group.namespace, group.owner), ()) if at > d.at]
    return replace(
        figures,
        requeued_gpu_hours=d.gpus * _overlap(d.at, min(again, default=now), since=since, now=now),
        requeues=int(since <= d.at <= now),
    )


def _returns(
    ours: Iterable[Deactivation], trail: Iterable[AuditRecord]
) -> dict[str, list[tuple[datetime, bool]]]:
    """Per workload, when it was seen active again, read from the trail once for every stop:
    each reactivation (True: it counts from the stop's own time) and our deactivations (it
    must have been active again to be deactivated again)."""
    found: dict[str, list[tuple[datetime, bool]]] = {}
    for r in trail:
        if r.action in REACTIVATED:
            found.setdefault(r.target, []).append((r.at, True))
    for d in ours:
        found.setdefault(str(d.target), []).append((d.at, False))
    return found


def _of_idle_now(
    row: WorkloadStatus, *, since: datetime, now: datetime
) -> tuple[Group, Figures] | None:
    idle_since = row.decision.idle_since
    if idle_since is None or not row.info.active:
        return None
    gpus = row.gpus
    held = gpus * _overlap(idle_since, now, since=since, now=now)
    not_running = held_class(row.decision) is State.NOT_RUNNING
    return (
        (_group(row.ref, None, {row.ref: row}), _held(held, not_running=not_running))
        if held
        else None
    )


def _held_before(d: Deactivation, *, since: datetime, now: datetime) -> Figures:
    """The GPU-hours a stop's GPUs were held before it, from the idle episode's start (none
    known: nothing), idle or not running as its subject says."""
    idle_since = d.subject.idle_since if d.subject is not None else None
    held = _overlap(idle_since, d.at, since=since, now=now) if idle_since else 0.0
    return _held(d.gpus * held, not_running=d.subject is not None and _not_running(d.subject))


def _held(gpu_hours: float, *, not_running: bool) -> Figures:
    """GPU-hours held idle, or held without work (not running): two figures, never summed."""
    if not_running:
        return Figures(held_not_running_gpu_hours=gpu_hours)
    return Figures(held_idle_gpu_hours=gpu_hours)


def _not_running(subject: Subject) -> bool:
    return subject.held == State.NOT_RUNNING.value


def _of_contest(
    record: AuditRecord,
    ours: Sequence[Deactivation],
    rows: Mapping[WorkloadRef, WorkloadStatus],
    *,
    since: datetime,
    now: datetime,
) -> tuple[Group, Figures] | None:
    ref = WorkloadRef.parse(record.target)
    if record.action != CONTESTED or ref is None or not since <= record.at <= now:
        return None
    subject = next((d.subject for d in reversed(ours) if d.target == ref and d.subject), None)
    return _group(ref, subject, rows), Figures(contested=1)


def _group(
    ref: WorkloadRef, subject: Subject | None, rows: Mapping[WorkloadRef, WorkloadStatus]
) -> Group:
    row = rows.get(ref)
    owner = row.info.owner if row is not None else None
    queue = subject.queue if subject is not None else None
    named = subject.owner if subject is not None else None
    return Group(
        namespace=ref.namespace,
        queue=queue or (row.info.queue if row is not None and row.info.queue else UNKNOWN),
        owner=named or owner_text(owner) or UNKNOWN,
    )


def _overlap(start: datetime, end: datetime, *, since: datetime, now: datetime) -> float:
    """Hours of [start, end] inside [since, now]."""
    seconds = (min(end, now) - max(start, since)).total_seconds()
    return max(seconds, 0.0) / _HOUR


def _is_ours(record: AuditRecord) -> bool:
    return record.action == Action.DEACTIVATE and record.actor == LOOP_ACTOR


def _word(record: AuditRecord) -> str:
    """ "failed: …" → "failed"; "skipped, retried next cycle: …" → "skipped"."""
    return record.outcome.partition(":")[0].partition(",")[0].strip()
