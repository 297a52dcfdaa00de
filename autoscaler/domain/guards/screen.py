"""Guards against doing harm, applied to a cycle's decisions after the policy engine.

Pure: the durable audit records, the breaker state and the contested marks are read by the
service and passed in. In order of precedence:
- contested: a workload whose deactivation was undone `times` times within `span` is left
  alone (Action.NONE, "contested: …") until an admin clears the mark;
- the circuit breaker: while open, every deactivation is deferred;
- the hourly cap: at most `max_per_hour` deactivations in any hour, counted from the durable
  audit records (so a restart does not reset it), the longest idle first.

A deactivation whose answer was lost (`unknown`) counts as begun for both, and a later cycle
settles it from the Workload itself (`settle_lost_answers`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum

from autoscaler.domain.annotations import deactivated_at
from autoscaler.domain.audit.subjects import AFTER_KUEUE_PREEMPTION, Subject
from autoscaler.domain.durations import format_duration
from autoscaler.domain.guards.breaker import CLOSED, BreakerRules, BreakerState
from autoscaler.domain.guards.caps import ACTING
from autoscaler.domain.models import Action, Decision, WorkloadInfo, WorkloadRef
from autoscaler.domain.outcomes import Outcome, OutcomeKind
from autoscaler.domain.policy.management import SUSPENDED_BY_US

HOUR = timedelta(hours=1)


class Deed(StrEnum):
    """The kinds of durable audit records the guards count."""

    DEACTIVATE = "deactivate"  # the loop's, written before the patch (and after one not done)
    DELETE = "delete"  # the loop's deletion of an owner (ISSUE 15), written as a deactivation is
    UNDONE = "undone"  # a deactivation of ours seen set back to active soon after
    CONTESTED = "contested"  # marked contested: left alone until an admin clears it
    UNCONTESTED = "uncontest"  # an admin cleared the mark
    # Rule `reclaim: via-kueue`: our priority boost written (counted as a stop begun) and
    # removed (docs/RECLAIM.md)
    MARK = "mark-for-preemption"
    UNMARK = "unmark"


NOT_DONE = (OutcomeKind.FAILED, OutcomeKind.SKIPPED)
KUEUE_DEACTIVATED = ("Deactivated", "InactiveWorkload")  # Evicted reasons for spec.active: false


@dataclass(frozen=True)
class LoopRecord:
    """A durable audit record as the guards see it."""

    at: datetime
    deed: Deed
    workload: WorkloadRef
    reason: str = ""
    # None: the deed itself (a deactivation begun, an undo counted, a mark). A follow-up
    # record at the same time carries how a begun deactivation ended when not plainly done.
    outcome: Outcome | None = None
    gpus: int | None = None
    peak: float | None = None
    coverage: float | None = None
    threshold: float | None = None
    subject: Subject | None = None  # a deactivation's rule, queues, owner and waiter


@dataclass(frozen=True)
class ContestedRules:
    undone_within: timedelta = timedelta(minutes=10)  # "undone" only when seen this soon
    times: int = 3  # undone this many times ...
    span: timedelta = timedelta(hours=24)  # ... within this span: contested


@dataclass(frozen=True)
class GuardRules:
    max_per_hour: int = 20
    breaker: BreakerRules = field(default_factory=BreakerRules)
    contested: ContestedRules = field(default_factory=ContestedRules)


@dataclass(frozen=True)
class Contest:
    """A contested mark: kept in the runtime state until an admin clears it."""

    since: datetime
    reason: str


@dataclass(frozen=True)
class GuardMemory:
    """What the guards keep between cycles and across restarts (the runtime state)."""

    breaker: BreakerState = CLOSED
    contested: Mapping[WorkloadRef, Contest] = field(default_factory=dict)


def started_in_last_hour(records: Iterable[LoopRecord], *, now: datetime) -> int:
    """Deactivations and via-kueue marks the loop began in (now - 1h, now]: each counted
    once, even if it failed. Only the deactivation that follows Kueue's preemption of our own
    mark (its subject says so, and a mark of ours came before it) is the same stop as that
    mark and is not counted again; a re-mark, or any other deactivation, counts."""
    records = list(records)
    first_marked: dict[WorkloadRef, datetime] = {}
    for r in records:
        if _marked(r):
            first_marked[r.workload] = min(r.at, first_marked.get(r.workload, r.at))
    return sum(
        1
        for r in records
        if (_began(r) or _marked(r))
        and now - HOUR < r.at <= now
        and not (_after_our_mark(r) and first_marked.get(r.workload, r.at) < r.at)
    )


def _marked(record: LoopRecord) -> bool:
    """A via-kueue mark begun (its record, not a follow-up with its outcome)."""
    return record.deed is Deed.MARK and record.outcome is None


def _after_our_mark(record: LoopRecord) -> bool:
    subject = record.subject
    return (
        record.deed is Deed.DEACTIVATE
        and subject is not None
        and subject.stopped_after == AFTER_KUEUE_PREEMPTION
    )


def leave_contested(
    decisions: Sequence[Decision], contested: Mapping[WorkloadRef, Contest]
) -> tuple[Decision, ...]:
    """A contested workload is never acted on, whatever the policy decided."""
    return tuple(
        replace(d, action=Action.NONE, reason=f"contested: {contested[d.workload].reason}")
        if d.workload in contested and d.action in (*ACTING, Action.DEFERRED)
        else d
        for d in decisions
    )


def newly_undone(
    workloads: Iterable[WorkloadInfo],
    records: Sequence[LoopRecord],
    *,
    rules: ContestedRules,
    now: datetime,
) -> tuple[LoopRecord, ...]:
    """An UNDONE record for each active workload we deactivated within `undone_within`,
    once per deactivation. A deactivation whose patch failed was never done, so never undone."""
    found = []
    for workload in workloads:
        ours = _last_deactivation(records, workload.ref)
        if not workload.active or ours is None or now - ours.at > rules.undone_within:
            continue
        # An undo is seen a cycle after the deactivation, so strictly later than it; one at
        # the same time was counted in the cycle that made this deactivation.
        if any(r.deed is Deed.UNDONE and r.at > ours.at for r in _about(records, workload.ref)):
            continue  # already counted
        within = format_duration(now - ours.at, units="hms", split="never")
        found.append(
            LoopRecord(
                at=now,
                deed=Deed.UNDONE,
                workload=workload.ref,
                reason=f"set back to active within {within} of our deactivation",
            )
        )
    return tuple(found)


def newly_contested(
    records: Sequence[LoopRecord],
    contested: Mapping[WorkloadRef, Contest],
    *,
    rules: ContestedRules,
    now: datetime,
) -> tuple[LoopRecord, ...]:
    """A CONTESTED record for each workload undone `times` times within `span`, counting
    only undos after its last mark or clearance (a cleared mark starts the count afresh)."""
    marked = []
    for ref in sorted({r.workload for r in records if r.deed is Deed.UNDONE}):
        if ref in contested:
            continue
        about = _about(records, ref)
        fresh_start = max(
            [now - rules.span]
            + [r.at for r in about if r.deed in (Deed.CONTESTED, Deed.UNCONTESTED)]
        )
        undos = [r for r in about if r.deed is Deed.UNDONE and r.at > fresh_start]
        if len(undos) >= rules.times:
            within = format_duration(rules.span, units="hms", split="never")
            reason = (
                f"our deactivation was undone {len(undos)} times within {within}; "
                "left alone until an admin clears the mark"
            )
            marked.append(LoopRecord(now, Deed.CONTESTED, ref, reason=reason))
    return tuple(marked)


def settle_lost_answers(
    workloads: Iterable[WorkloadInfo], records: Sequence[LoopRecord]
) -> tuple[LoopRecord, ...]:
    """A follow-up for each deactivation whose answer was lost, settled from the Workload
    itself: our deactivated-at annotation (written in the same patch as `spec.active: false`)
    equal to the action's time, or Kueue's Evicted condition for a deactivation, confirms
    it; neither refutes it. `spec.active` alone proves nothing: it may be undone already.
    A Workload not seen stays unsettled (still counted as begun)."""
    seen = {w.ref: w for w in workloads}
    settled = []
    for lost in _unsettled(records):
        workload = seen.get(lost.workload)
        if workload is not None:
            outcome = _evidence(workload, lost)
            settled.append(replace(lost, outcome=outcome))
    return tuple(settled)


def _unsettled(records: Sequence[LoopRecord]) -> list[LoopRecord]:
    """Lost answers with no later record of how they ended (same workload, same time)."""
    ended = {(r.workload, r.at) for r in records if _ended_as(r, (OutcomeKind.DONE, *NOT_DONE))}
    return [
        r
        for r in records
        if _ended_as(r, (OutcomeKind.UNKNOWN,)) and (r.workload, r.at) not in ended
    ]


def _evidence(workload: WorkloadInfo, lost: LoopRecord) -> Outcome:
    ours = deactivated_at(workload.annotations)
    if ours is not None and ours == lost.at.replace(microsecond=0):
        # A suspended RayCluster's annotations go ahead of its suspend patch (ISSUE 17), so
        # only both together confirm it.
        if workload.manager in SUSPENDED_BY_US and workload.active:
            return Outcome.failed("refuted: our annotations are there, spec.suspend is not")
        return Outcome.done("confirmed: the Workload carries our deactivated-at annotation")
    if workload.evicted_reason in KUEUE_DEACTIVATED:
        return Outcome.done(f"confirmed: Kueue evicted it ({workload.evicted_reason})")
    return Outcome.failed("refuted: the Workload shows no sign of the lost patch")


def _last_deactivation(records: Sequence[LoopRecord], ref: WorkloadRef) -> LoopRecord | None:
    """Our latest deactivation of `ref`, unless its patch was not done (a follow-up record
    at the same time says so). One whose answer was lost counts until refuted."""
    about = _about(records, ref)
    begun = [r for r in about if _began(r)]
    if not begun:
        return None
    latest = max(begun, key=lambda r: r.at)
    not_done = any(_ended_as(r, NOT_DONE) and r.at == latest.at for r in about)
    return None if not_done else latest


def _began(record: LoopRecord) -> bool:
    return record.deed is Deed.DEACTIVATE and record.outcome is None


def _ended_as(record: LoopRecord, kinds: Iterable[OutcomeKind]) -> bool:
    outcome = record.outcome
    return record.deed is Deed.DEACTIVATE and outcome is not None and outcome.kind in kinds


def _about(records: Sequence[LoopRecord], ref: WorkloadRef) -> list[LoopRecord]:
    return [r for r in records if r.workload == ref]
