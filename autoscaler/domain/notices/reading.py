"""Reading a workload's notice back from its annotations (ISSUE 15): the warning that counts,
the snooze in force, and the stop's earliest time.

Every time comes from the Workload's annotations, never from memory, so a restarted service
or a second replica reads the same notice from the same object. A warning counts only for
the object it was given to (WARNED_UID) and only when written after the workload's latest
creation, admission, reactivation or GPU pod start (`policy.not_before`), and after any
exemption made or in force since (EXEMPT_SET_AT, EXEMPT_UNTIL): an exemption answers the
warning as a snooze does. Anything older is void, and the stage gives a fresh warning when
one is due.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import parse_time
from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.notices.notice import Notice
from autoscaler.domain.notices.snoozes import hand_set_snooze
from autoscaler.domain.policy.decisions import not_before
from autoscaler.domain.policy.rules import Rule, RuleAction

STOPPING = (RuleAction.DEACTIVATE, RuleAction.DELETE)  # the rule actions that stop


@dataclass(frozen=True)
class Warned:
    """A warning that counts: when it was written and the stop it promised."""

    at: datetime
    promised: datetime | None  # STOP_PLANNED_AT as written; None when missing or unreadable

    def stop_at(self, *, warn_before: timedelta) -> datetime:
        """The promise kept, and never less notice than the rule asks now (a raised
        warnBefore pushes the stop; a lowered one never brings it forward)."""
        least = self.at + warn_before
        return max(self.promised, least) if self.promised is not None else least


@dataclass(frozen=True)
class Snoozed:
    until: datetime
    by: str


def read_notice(workload: WorkloadInfo, *, rule: Rule, now: datetime) -> Notice:
    """The workload's warning, snooze and planned stop, as its annotations say at `now`.
    A warn-only (or observe) rule plans no stop, so its notice has no stop time."""
    warned = valid_warning(workload)
    snoozed = snooze_in_force(workload, rule=rule, now=now)
    stops = warned is not None and rule.action in STOPPING
    return Notice(
        warned_at=warned.at if warned is not None else None,
        stop_at=warned.stop_at(warn_before=rule.notice.warn_before)
        if warned is not None and stops
        else None,
        snoozed_until=snoozed.until if snoozed is not None else None,
        snoozed_by=snoozed.by if snoozed is not None else None,
    )


def valid_warning(workload: WorkloadInfo) -> Warned | None:
    """The Workload's warning when it counts; None when absent or void."""
    written = workload.annotations
    at = parse_time(written.get(keys.WARNED_AT, ""))
    if at is None or written.get(keys.WARNED_UID) != workload.uid:
        return None
    if at <= warnings_count_after(workload):
        return None
    return Warned(at=at, promised=parse_time(written.get(keys.STOP_PLANNED_AT, "")))


def warnings_count_after(workload: WorkloadInfo) -> datetime:
    """A warning written at or before this time belongs to an earlier life of the workload,
    or was answered by an exemption: one made through the API after it (EXEMPT_SET_AT), or
    one in force after it, however it was set (its EXEMPT_UNTIL is later: a hand-set
    `exempt-until` on the RayCluster leaves no other trace once it has run out)."""
    exempted = (
        parse_time(source.get(key, ""))
        for source in (workload.annotations, workload.owner_annotations)
        for key in (keys.EXEMPT_SET_AT, keys.EXEMPT_UNTIL)
    )
    return max([not_before(workload), *(t for t in exempted if t is not None)])


def snooze_in_force(workload: WorkloadInfo, *, rule: Rule, now: datetime) -> Snoozed | None:
    """The snooze holding the workload at `now`. A hand-set one counts as the bounds let it
    (clipped, or nothing when refused) even before the engine writes the bounded value."""
    written = workload.annotations
    by = written.get(keys.SNOOZED_BY) or "unknown"
    hand_set = hand_set_snooze(workload, bounds=rule.notice.snooze, now=now)
    if hand_set is not None:
        return Snoozed(hand_set.until, by) if hand_set.until is not None else None
    until = parse_time(written.get(keys.SNOOZED_UNTIL, ""))
    return Snoozed(until, by) if until is not None and until > now else None


def idle_held_told(workload: WorkloadInfo) -> bool:
    """People were told about this admission's idle-held GPUs already."""
    told = parse_time(workload.annotations.get(keys.IDLE_HELD_NOTIFIED_AT, ""))
    return told is not None and told > not_before(workload)
