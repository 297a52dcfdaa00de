"""What became of the loop's deactivations, noted from each published snapshot by the leader:
the waiting Workload a deactivation was for is admitted (`waiter-admitted`, at its admission
time) and the deactivated workload is active again (`seen-reactivated`, at its reactivated-at
annotation, else when this cycle saw it). The savings report reads both from the trail.

Each note is keyed by the deactivated workload and the deactivation's time, so neither a
restart nor a second replica writes it twice. The deactivations followed are read from the
durable trail once on taking the lead, then added from each cycle's own actions; one is
dropped once both questions are answered, its workloads are gone, or it is older than
`horizon`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import StateBacking
from autoscaler.domain.annotations import reactivated_at
from autoscaler.domain.audit.records import LOOP_ACTOR, AuditRecord, RecordKey
from autoscaler.domain.audit.savings import SEEN_REACTIVATED, WAITER_ADMITTED, our_deactivations
from autoscaler.domain.audit.subjects import Subject
from autoscaler.domain.durations import format_duration
from autoscaler.domain.models import Action, Snapshot, WorkloadRef
from autoscaler.domain.outcomes import OutcomeKind
from autoscaler.engine.acting.context import Leads, always_leads

HORIZON = timedelta(days=7)


@dataclass(frozen=True)
class Followed:
    """One deactivation of ours whose waiter or reactivation is still to be seen."""

    target: WorkloadRef
    at: datetime  # when it was decided
    beneficiary: WorkloadRef | None  # None: no waiter, or its admission is already noted
    reactivation: bool = True  # still to be seen
    seen_inactive: bool = False  # a read showing it active before that may predate the patch


class FollowUps:
    def __init__(
        self,
        *,
        state: StateBacking,
        logger: logging.Logger,
        leads: Leads = always_leads,
        horizon: timedelta = HORIZON,
    ) -> None:
        self._state = state
        self._log = logger
        self._leads = leads
        self._horizon = horizon
        self._followed: list[Followed] | None = None  # None: to be read from the trail

    def __call__(self, snapshot: Snapshot) -> None:
        if not self._leads():
            self._followed = None  # read afresh on taking the lead again
            return
        if not snapshot.cluster_ok:
            return  # a workload missing from a failed read is not gone
        followed = self._load(snapshot)
        notes, still = _notes(snapshot, followed, since=snapshot.taken_at - self._horizon)
        still += _acted(snapshot)  # its rows were read before the patch: judged next cycle
        if notes:
            try:
                self._state.record(*notes)
            except ClusterError as exc:
                self._log.warning("follow-up records not written, retried: %s", exc)
                still = followed
        self._followed = still

    def _load(self, snapshot: Snapshot) -> list[Followed]:
        if self._followed is not None:
            return self._followed
        try:
            trail = self._state.read().audit
        except ClusterError as exc:
            self._log.warning("audit trail unreadable, deactivations not followed: %s", exc)
            return []
        since = snapshot.taken_at - self._horizon
        return [
            _followed(d.target, d.at, d.subject, trail)
            for d in our_deactivations(trail)
            if d.at >= since
        ]


def _followed(
    target: WorkloadRef, at: datetime, subject: Subject | None, trail: tuple[AuditRecord, ...]
) -> Followed:
    noted = {r.action for r in trail if r.key is not None and r.key == _key(target, at, r.action)}
    waiter = subject.beneficiary if subject is not None else None
    return Followed(
        target=target,
        at=at,
        beneficiary=WorkloadRef.parse(waiter) if waiter and WAITER_ADMITTED not in noted else None,
        reactivation=SEEN_REACTIVATED not in noted,
    )


def _acted(snapshot: Snapshot) -> list[Followed]:
    """This cycle's deactivations that applied (or may have)."""
    found = []
    for action in snapshot.actions:
        begun = action.outcome.kind in (OutcomeKind.DONE, OutcomeKind.UNKNOWN)
        if action.action is Action.DEACTIVATE and begun:
            row = snapshot.find(action.workload)
            waiter = row.decision.beneficiary if row is not None else None
            found.append(Followed(action.workload, action.at, waiter))
    return found


def _notes(
    snapshot: Snapshot, followed: list[Followed], *, since: datetime
) -> tuple[list[AuditRecord], list[Followed]]:
    notes: list[AuditRecord] = []
    still: list[Followed] = []
    for followed_one in followed:
        if followed_one.at < since:
            continue
        stopped = snapshot.find(followed_one.target)
        inactive = stopped is not None and not stopped.info.active
        one = replace(followed_one, seen_inactive=True) if inactive else followed_one
        admitted, reactivated = _admitted(snapshot, one), _reactivated(snapshot, one)
        notes += [note for note in (admitted, reactivated) if isinstance(note, AuditRecord)]
        left = replace(
            one,
            beneficiary=one.beneficiary if admitted is _WAITING else None,
            reactivation=reactivated is _WAITING,
        )
        if left.beneficiary is not None or left.reactivation:
            still.append(left)
    return notes, still


_WAITING = "waiting"  # not yet: follow on
_GONE = "gone"  # never: stop following


def _admitted(snapshot: Snapshot, one: Followed) -> AuditRecord | str:
    if one.beneficiary is None:
        return _GONE
    waiter = snapshot.find(one.beneficiary)
    if waiter is None:
        return _GONE
    at = waiter.info.admitted_at
    if not waiter.info.admitted or at is None:
        return _WAITING
    at = max(at, one.at)  # admitted before the decision was seen: no wait shortened
    after = _span(at - one.at)
    reason = f"{one.beneficiary} admitted {after} after {one.target} was deactivated for it"
    waiter_queue = waiter.info.cluster_queue
    return _note(one, WAITER_ADMITTED, at=at, reason=reason, waiter=(one.beneficiary, waiter_queue))


def _reactivated(snapshot: Snapshot, one: Followed) -> AuditRecord | str:
    if not one.reactivation:
        return _GONE
    row = snapshot.find(one.target)
    if row is None:
        return _GONE
    annotated = reactivated_at(row.info.annotations, row.info.owner_annotations)
    if annotated is not None and annotated >= one.at:
        at = annotated  # the API's reactivation says when
    elif row.info.active and one.seen_inactive:
        at = snapshot.taken_at  # set back by hand: when this cycle saw it
    else:
        return _WAITING
    reason = f"active again after {_span(at - one.at)} (from our deactivation)"
    return _note(one, SEEN_REACTIVATED, at=at, reason=reason, waiter=None)


def _span(span: timedelta) -> str:
    """A span as the reasons say it: `45m`, `1h30m` (never a timedelta's `0:45:00`)."""
    return format_duration(span, units="dhms", split="always")


def _note(
    one: Followed,
    action: str,
    *,
    at: datetime,
    reason: str,
    waiter: tuple[WorkloadRef, str | None] | None,
) -> AuditRecord:
    """`waiter`: the admitted waiter and its ClusterQueue, which `reason` names (told per
    reader: domain/tenant_names.py)."""
    return AuditRecord(
        at=at,
        actor=LOOP_ACTOR,
        action=action,
        target=str(one.target),
        reason=reason,
        outcome="noted",
        namespace=one.target.namespace,
        key=_key(one.target, one.at, action),
        subject=Subject(beneficiary=str(waiter[0]), beneficiary_queue=waiter[1])
        if waiter is not None
        else None,
    )


def _key(target: WorkloadRef, at: datetime, action: str) -> RecordKey:
    """The deactivated workload and the deactivation's time: one note of each kind."""
    return RecordKey(subject=str(target), episode=at.replace(microsecond=0), detail=action)
