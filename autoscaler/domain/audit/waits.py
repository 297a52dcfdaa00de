"""Queue wait shortened, the one definition every surface reads (docs/SAVINGS.md): for each
waiter that followed one of our stops (a Workload admitted into the quota the stop freed, in
the stopped workload's ClusterQueue or cohort, whatever rule made the stop), the time between
its admission and when it would otherwise have been admitted. Bigger is better.

Without our stop the waiter would have been admitted once the stopped workload gave its quota
back by itself: when it ended (the loop saw it gone, `seen-ended`). Until that is seen, the
service does not know when it would have ended: the waiter counts "at least" the time from
its admission to the end of what was observed (the period's end, or the end of the follow-up,
`FOLLOWED_FOR` after the stop). Each waiter counts once, on the first stop it followed.

Pure: `now` is an argument. The notes are written by the leader's follow-ups
(engine/listeners/follow_ups.py), keyed by the stopped workload and the stop's time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from autoscaler.domain.audit.records import AuditRecord
from autoscaler.domain.models import Action, WorkloadRef

WAITER_ADMITTED = "waiter-admitted"  # a Workload admitted into the quota a stop of ours freed
SEEN_ENDED = "seen-ended"  # the stopped workload seen gone: without us it would have ended then
FOLLOWED_FOR = timedelta(days=7)  # how long the leader follows a stop


def stop_key(stopped: WorkloadRef | str, at: datetime) -> tuple[str, datetime]:
    """What a stop's notes are keyed by (`RecordKey.subject`, `RecordKey.episode`): the stopped
    workload and the stop's time to the second, as the ConfigMap keeps a time."""
    return str(stopped), at.replace(microsecond=0)


@dataclass(frozen=True)
class WaitShortened:
    stopped: WorkloadRef  # the workload our stop took the quota from
    stopped_at: datetime  # the stop's time, to the second (as its notes' key keeps it)
    waiter: str  # "namespace/name" of the Workload admitted into the freed quota
    admitted_at: datetime
    otherwise_at: datetime  # when it would otherwise have been admitted, as far as known
    at_least: bool  # the stopped workload was not seen ending: `by` is a lower bound

    @property
    def by(self) -> timedelta:
        """How much sooner the waiter was admitted; never negative."""
        return max(self.otherwise_at - self.admitted_at, timedelta(0))


def seen_ended(trail: Iterable[AuditRecord]) -> dict[tuple[str, datetime], datetime]:
    """When each stop's workload was seen gone, by the stop's key (`stop_key`)."""
    return {
        (r.key.subject, r.key.episode): r.at
        for r in trail
        if r.action == SEEN_ENDED and r.key is not None and r.key.episode is not None
    }


def waits_shortened(trail: Iterable[AuditRecord], *, now: datetime) -> list[WaitShortened]:
    """Every waiter noted in the trail, each once (on the first stop it followed), oldest
    stop first. A waiter admitted after `now` is left out."""
    records = list(trail)
    ended = seen_ended(records)
    # a note from before notes named their waiter: the stop's beneficiary
    beneficiaries: dict[tuple[str, datetime | None], str | None] = {
        stop_key(r.target, r.at): r.subject.beneficiary
        for r in records
        if r.action == Action.DEACTIVATE and r.subject is not None and r.subject.beneficiary
    }
    found: dict[str, WaitShortened] = {}
    notes = [r for r in records if r.action == WAITER_ADMITTED and r.at <= now]
    for note in sorted(notes, key=lambda r: (r.key.episode if r.key else None) or r.at):
        key = note.key
        waiter = (note.subject.beneficiary if note.subject else None) or (
            beneficiaries.get((key.subject, key.episode)) if key is not None else None
        )
        stopped = WorkloadRef.parse(key.subject) if key is not None else None
        if key is None or key.episode is None or waiter is None or stopped is None:
            continue
        if waiter in found:
            continue  # served by several stops: counted on the first
        observed_until = min(now, key.episode + FOLLOWED_FOR)
        end = ended.get((key.subject, key.episode))
        seen_ending = end is not None and end <= observed_until
        found[waiter] = WaitShortened(
            stopped=stopped,
            stopped_at=key.episode,
            waiter=waiter,
            admitted_at=note.at,
            otherwise_at=end if end is not None and seen_ending else observed_until,
            at_least=not seen_ending,
        )
    return sorted(found.values(), key=lambda w: (w.stopped_at, w.admitted_at, w.waiter))
