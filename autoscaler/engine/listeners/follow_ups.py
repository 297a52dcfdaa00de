"""What became of the loop's deactivations, noted from each published snapshot by the leader:
a waiter is admitted into the quota it freed (`waiter-admitted`, at its admission time), the
deactivated workload is active again (`seen-reactivated`, at its reactivated-at annotation,
else when this cycle saw it), and it is gone (`seen-ended`: without us it would have given its
quota back by then). The savings report reads them from the trail (domain/audit/waits.py).

The waiters of a stop: the Workload a contention-driven stop was for (its beneficiary); for
any other stop, whatever rule made it, the Workloads admitted after it in its ClusterQueue or
cohort while it stays stopped, first admitted first, until their GPUs cover the GPUs it freed.
A Workload asking for no GPU is no waiter. Each waiter is credited to one stop only.

Each note is keyed by the deactivated workload and the deactivation's time, so neither a
restart nor a second replica writes it twice. The deactivations followed are read from the
durable trail once on taking the lead (the stop's cohort from its record, the GPUs still
free from its notes: each waiter's note keeps the GPUs it took), then added from each
cycle's own actions; one is dropped once nothing about it is left to see (its waiter, its
reactivation, its end, GPUs still free for waiters), or once it is older than `horizon`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import StateBacking
from autoscaler.domain.annotations import reactivated_at
from autoscaler.domain.audit.records import LOOP_ACTOR, AuditRecord, RecordKey
from autoscaler.domain.audit.savings import SEEN_REACTIVATED, Deactivation, our_deactivations
from autoscaler.domain.audit.subjects import Subject, owner_text, subject_of
from autoscaler.domain.audit.waits import FOLLOWED_FOR, SEEN_ENDED, WAITER_ADMITTED, stop_key
from autoscaler.domain.durations import format_duration
from autoscaler.domain.models import Action, Snapshot, WorkloadRef, WorkloadStatus
from autoscaler.domain.outcomes import OutcomeKind
from autoscaler.domain.policy.owner_words import stop_lasts
from autoscaler.engine.acting.context import Leads, always_leads


@dataclass(frozen=True)
class Followed:
    """One deactivation of ours with something still to be seen: its beneficiary admitted,
    its reactivation, its end, or waiters for the GPUs it freed."""

    target: WorkloadRef
    at: datetime  # when it was decided
    beneficiary: WorkloadRef | None  # None: no waiter, or its admission is already noted
    reactivation: bool = True  # still to be seen
    seen_inactive: bool = False  # a read showing it active before that may predate the patch
    cluster_queue: str | None = None  # where its quota was freed
    cohort: str | None = None
    owner: str | None = None  # "Kind/name": its own Workload queued again is no waiter of it
    free_gpus: int = 0  # GPUs freed still to be taken by waiters (none with a beneficiary)
    ending: bool = False  # a lasting stop whose end (the workload gone) is still to be seen

    @property
    def open(self) -> bool:
        return self.beneficiary is not None or self.reactivation or self.ending


class FollowUps:
    def __init__(
        self,
        *,
        state: StateBacking,
        logger: logging.Logger,
        leads: Leads = always_leads,
        horizon: timedelta = FOLLOWED_FOR,
    ) -> None:
        self._state = state
        self._log = logger
        self._leads = leads
        self._horizon = horizon
        self._followed: list[Followed] | None = None  # None: to be read from the trail
        self._credited: set[str] = set()  # waiters already noted for a stop

    def __call__(self, snapshot: Snapshot) -> None:
        if not self._leads():
            self._followed = None  # read afresh on taking the lead again
            return
        if not snapshot.cluster_ok:
            return  # a workload missing from a failed read is not gone
        followed = self._load(snapshot)
        since = snapshot.taken_at - self._horizon
        # its rows were read before the patch: judged next cycle (once: the trail read on
        # taking the lead may hold this cycle's stops already)
        acted = _acted(snapshot, known=followed)
        notes, still = _notes(snapshot, followed, since=since, credited=set(self._credited))
        if notes:
            try:
                self._state.record(*notes)
            except ClusterError as exc:
                self._log.warning("follow-up records not written, retried: %s", exc)
                still = followed
                notes = []
        self._credited |= {_waiter_of(note) for note in notes if note.action == WAITER_ADMITTED}
        self._followed = still + acted

    def _load(self, snapshot: Snapshot) -> list[Followed]:
        if self._followed is not None:
            return self._followed
        try:
            trail = self._state.read().audit
        except ClusterError as exc:
            self._log.warning("audit trail unreadable, deactivations not followed: %s", exc)
            return []
        since = snapshot.taken_at - self._horizon
        self._credited = {_waiter_of(r) for r in trail if r.action == WAITER_ADMITTED}
        return [_followed(d, trail) for d in our_deactivations(trail) if d.at >= since]


def _waiter_of(note: AuditRecord) -> str:
    return (note.subject.beneficiary if note.subject else None) or ""


def _followed(d: Deactivation, trail: tuple[AuditRecord, ...]) -> Followed:
    """A stop read back from the trail: what its notes leave open, as the leader that wrote
    them would have it. A record without a cohort: none known."""
    notes = [r for r in trail if r.key is not None and _is_key_of(r.key, d.target, d.at)]
    return _following(d.target, d.at, d.subject or Subject(), freed=d.gpus, notes=notes)


def _following(
    target: WorkloadRef, at: datetime, subject: Subject, *, freed: int, notes: list[AuditRecord]
) -> Followed:
    """A stop as its record's subject tells it (the waiter it was for, its ClusterQueue,
    cohort and owner), less what its `notes` have seen already."""
    noted = {r.action for r in notes}
    waiter, lasts = subject.beneficiary, stop_lasts(subject.owner)
    # a lasting stop frees its quota while it stays stopped (as `_notes` has it)
    given_back = lasts and bool(noted & {SEEN_REACTIVATED, SEEN_ENDED})
    return Followed(
        target=target,
        at=at,
        beneficiary=WorkloadRef.parse(waiter) if waiter and WAITER_ADMITTED not in noted else None,
        reactivation=SEEN_REACTIVATED not in noted,
        cluster_queue=subject.cluster_queue,
        cohort=subject.cohort,
        owner=subject.owner,
        free_gpus=0 if waiter or given_back else _still_free(freed, notes),
        ending=SEEN_ENDED not in noted and lasts,
    )


def _still_free(freed: int, notes: list[AuditRecord]) -> int:
    """The GPUs a stop freed less those its noted waiters took; a note from before notes
    kept them counts as taking all (as the leader that wrote it had it)."""
    taken = [
        note.subject.beneficiary_gpus if note.subject is not None else None
        for note in notes
        if note.action == WAITER_ADMITTED
    ]
    return 0 if None in taken else freed - sum(gpus for gpus in taken if gpus is not None)


def _is_key_of(key: RecordKey, target: WorkloadRef, at: datetime) -> bool:
    return (key.subject, key.episode) == stop_key(target, at)


def _acted(snapshot: Snapshot, *, known: list[Followed]) -> list[Followed]:
    """This cycle's deactivations that applied (or may have), less those already `known`."""
    followed = {stop_key(one.target, one.at) for one in known}
    found = []
    for action in snapshot.actions:
        begun = action.outcome.kind in (OutcomeKind.DONE, OutcomeKind.UNKNOWN)
        new = stop_key(action.workload, action.at) not in followed
        if action.action is Action.DEACTIVATE and begun and new:
            row = snapshot.find(action.workload)
            found.append(_stopped(action.workload, action.at, row))
    return found


def _stopped(target: WorkloadRef, at: datetime, row: WorkloadStatus | None) -> Followed:
    """This cycle's stop, read as its record's subject will tell it, with nothing noted yet."""
    if row is None:
        return Followed(target, at, None)
    subject = subject_of(row.info, row.decision) or Subject()
    return _following(target, at, subject, freed=row.gpus, notes=[])


def _notes(
    snapshot: Snapshot, followed: list[Followed], *, since: datetime, credited: set[str]
) -> tuple[list[AuditRecord], list[Followed]]:
    """`credited`: the waiters already noted, added to as this pass notes more. The
    beneficiaries admitted are noted first, so none is also taken for a waiter of another
    stop, whatever the order the stops are followed in (as a leader reading the trail has it)."""
    notes: list[AuditRecord] = []
    still: list[Followed] = []
    admitted = _admitted_by_quota(snapshot) if any(f.free_gpus > 0 for f in followed) else {}
    followed = [one for one in followed if one.at >= since]
    beneficiaries = [_admitted(snapshot, one) for one in followed]
    credited |= {_waiter_of(note) for note in beneficiaries if isinstance(note, AuditRecord)}
    for followed_one, beneficiary in zip(followed, beneficiaries, strict=True):
        stopped = snapshot.find(followed_one.target)
        inactive = stopped is not None and not stopped.info.active
        one = replace(followed_one, seen_inactive=True) if inactive else followed_one
        reactivated, ended = _reactivated(snapshot, one), _ended(snapshot, one)
        waiters, free = _waiters(one, admitted, credited=credited)
        credited |= {_waiter_of(note) for note in waiters}
        found = (beneficiary, reactivated, ended)
        notes += [note for note in found if isinstance(note, AuditRecord)] + waiters
        left = replace(
            one,
            beneficiary=one.beneficiary if beneficiary is _WAITING else None,
            reactivation=reactivated is _WAITING,
            ending=ended is _WAITING,
            # a lasting stop frees its quota while it stays stopped (a requeue: until used)
            free_gpus=free if not one.ending or _WAITING == reactivated == ended else 0,
        )
        if left.open or left.free_gpus > 0:
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
    return _waiter_note(one, waiter, at=at, for_it=True)


def _admitted_by_quota(snapshot: Snapshot) -> dict[str, list[WorkloadStatus]]:
    """The admitted rows by ClusterQueue ("queue:" + name) and cohort ("cohort:" + name),
    first admitted first: read once per snapshot, whatever the number of stops followed."""
    found: dict[str, list[WorkloadStatus]] = {}
    rows = (r for r in snapshot.workloads if r.info.admitted and r.info.admitted_at is not None)
    for row in sorted(rows, key=lambda r: (r.info.admitted_at, str(r.ref))):
        for key in _quota_keys(row.info.cluster_queue, row.info.cohort):
            found.setdefault(key, []).append(row)
    return found


def _quota_keys(cluster_queue: str | None, cohort: str | None) -> list[str]:
    return [
        *([f"queue:{cluster_queue}"] if cluster_queue else []),
        *([f"cohort:{cohort}"] if cohort else []),
    ]


def _waiters(
    one: Followed, admitted: dict[str, list[WorkloadStatus]], *, credited: set[str]
) -> tuple[list[AuditRecord], int]:
    """A stop without a beneficiary: the Workloads asking for GPUs admitted since, in its
    ClusterQueue or cohort, first admitted first, until their GPUs cover what it freed; and
    the GPUs left."""
    if one.free_gpus <= 0:
        return [], one.free_gpus
    shared = {
        str(row.ref): row
        for key in _quota_keys(one.cluster_queue, one.cohort)
        for row in admitted.get(key, ())
    }
    candidates = sorted(
        (
            row
            for row in shared.values()
            if row.ref != one.target
            and row.gpus > 0  # a CPU-only Workload takes none of the freed GPUs
            and str(row.ref) not in credited
            and (one.owner is None or owner_text(row.info.owner) != one.owner)
            and row.info.admitted_at is not None
            and row.info.admitted_at >= one.at
        ),
        key=lambda row: (row.info.admitted_at, str(row.ref)),
    )
    notes, free = [], one.free_gpus
    for row in candidates:
        if free <= 0:
            break
        assert row.info.admitted_at is not None
        gpus = row.gpus
        notes.append(_waiter_note(one, row, at=row.info.admitted_at, for_it=False, gpus=gpus))
        free -= gpus
    return notes, free


def _waiter_note(
    one: Followed, waiter: WorkloadStatus, *, at: datetime, for_it: bool, gpus: int | None = None
) -> AuditRecord:
    """`for_it`: the waiter is the stop's beneficiary, noted once per stop (keyed as such notes
    always were); any other waiter is keyed by its name, with `gpus`, what it took of the GPUs
    the stop freed."""
    at = max(at, one.at)  # admitted before the stop was seen: no sooner
    named = " for it" if for_it else ""
    detail = WAITER_ADMITTED if for_it else str(waiter.ref)
    reason = f"{waiter.ref} admitted {_span(at - one.at)} after {one.target} was deactivated{named}"
    return _note(
        one,
        WAITER_ADMITTED,
        at=at,
        reason=reason,
        waiter=(waiter.ref, waiter.info.cluster_queue),
        detail=detail,
        waiter_gpus=gpus,
    )


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


def _ended(snapshot: Snapshot, one: Followed) -> AuditRecord | str:
    """A lasting stop's workload gone (its owner deleted it): without our stop it would have
    given its quota back by now, so a waiter would have been admitted by then."""
    if not one.ending:
        return _GONE
    if snapshot.find(one.target) is not None:
        return _WAITING
    reason = f"gone {_span(snapshot.taken_at - one.at)} after our deactivation"
    return _note(one, SEEN_ENDED, at=snapshot.taken_at, reason=reason, waiter=None)


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
    detail: str | None = None,
    waiter_gpus: int | None = None,
) -> AuditRecord:
    """`waiter`: the admitted waiter and its ClusterQueue, which `reason` names (told per
    reader: domain/tenant_names.py). `detail`: what makes the note one of its kind (a stop
    noting several waiters keys each by the waiter)."""
    stopped, episode = stop_key(one.target, one.at)
    return AuditRecord(
        at=at,
        actor=LOOP_ACTOR,
        action=action,
        target=str(one.target),
        reason=reason,
        outcome="noted",
        namespace=one.target.namespace,
        key=RecordKey(subject=stopped, episode=episode, detail=detail or action),
        subject=Subject(
            beneficiary=str(waiter[0]), beneficiary_queue=waiter[1], beneficiary_gpus=waiter_gpus
        )
        if waiter is not None
        else None,
    )
