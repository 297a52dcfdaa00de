"""Snoozes: "keep it until then", granted within the rule's bounds (ISSUE 15).

A snooze is a handful of annotations on the Workload. Granting one answers the warning it
follows, so its patch removes the warning (WARNED_AT, WARNED_UID, STOP_PLANNED_AT): a link
names the warning it answers, and once that warning is gone the same link does nothing. The
stage (`domain/notices/staging.py`) warns again `warnBefore` ahead of the snooze's end if the
workload is still idle then.

Bounds an annotation edit cannot pass: one snooze lasts at most `max_duration` (a longer ask
is clipped, the ask kept in SNOOZE_REQUESTED) and at most `per_day` are granted in any 24
hours (SNOOZES lists when). The service writes the end it granted twice, in SNOOZED_UNTIL and
SNOOZE_GRANTED; a SNOOZED_UNTIL that differs was edited by hand and is bounded like a request.

Pure: `now` and the bounds are arguments; every patch is a merge patch (None removes a key).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import parse_time, time_text
from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.notices.notice import SnoozeBounds

DAY = timedelta(hours=24)
HAND_SET_BY = "hand-set annotation"  # who a hand-written snooze is from, when it names nobody
HAND_SET_REASON = "set by annotation"
SNOOZE_KEYS = (
    keys.SNOOZED_UNTIL,
    keys.SNOOZED_BY,
    keys.SNOOZE_REASON,
    keys.SNOOZE_GRANTED,
    keys.SNOOZE_REQUESTED,
)


@dataclass(frozen=True)
class SnoozeGrant:
    """What a request for a snooze came to: granted until a time (perhaps clipped), or refused.

    `patch` is the merge patch for the Workload's annotations: the snooze written (and the
    warning it answers removed) when granted; for a refused hand-set snooze, the snooze
    removed; empty for a refused request (nothing to write)."""

    until: datetime | None  # the end granted; None when refused
    patch: Mapping[str, str | None] = field(default_factory=dict)
    clipped_from: datetime | None = None  # the end asked for, when it was past the bound
    refused: str | None = None  # why nothing was granted


def grant_snooze(
    workload: WorkloadInfo,
    *,
    until: datetime,
    by: str,
    reason: str,
    bounds: SnoozeBounds,
    now: datetime,
) -> SnoozeGrant:
    """A snooze until `until` asked by `by`: clipped to `now + max_duration`, refused when it
    ends before now or when `per_day` snoozes were already granted in the last 24 hours."""
    refusal = _refusal(workload.annotations, until=until, bounds=bounds, now=now)
    if refusal is not None:
        return SnoozeGrant(until=None, refused=refusal)
    limit = now + bounds.max_duration
    granted = min(until, limit)
    clipped_from = until if until > limit else None
    recent = [time_text(t) for t in grant_times(workload.annotations, now=now)]
    patch: dict[str, str | None] = {
        keys.SNOOZED_UNTIL: time_text(granted),
        keys.SNOOZE_GRANTED: time_text(granted),
        keys.SNOOZED_BY: by,
        keys.SNOOZE_REASON: reason,
        keys.SNOOZES: ",".join([*recent, time_text(now)]),
        keys.SNOOZE_REQUESTED: time_text(clipped_from) if clipped_from is not None else None,
        **dict.fromkeys(keys.WARNING_KEYS),  # the warning is answered: a second link does nothing
    }
    return SnoozeGrant(until=granted, patch=patch, clipped_from=clipped_from)


def hand_set_snooze(
    workload: WorkloadInfo, *, bounds: SnoozeBounds, now: datetime
) -> SnoozeGrant | None:
    """A SNOOZED_UNTIL written by hand (it differs from the end the service granted), bounded
    like a request from whoever SNOOZED_BY names. Refused (too many today), the patch removes
    it. None when no snooze in force was hand-set."""
    written = workload.annotations
    until = parse_time(written.get(keys.SNOOZED_UNTIL, ""))
    if until is None or until <= now:
        return None
    if _granted_by_us(written, until=until, bounds=bounds, now=now):
        return None
    grant = grant_snooze(
        workload,
        until=until,
        by=written.get(keys.SNOOZED_BY) or HAND_SET_BY,
        reason=written.get(keys.SNOOZE_REASON) or HAND_SET_REASON,
        bounds=bounds,
        now=now,
    )
    if grant.refused is not None:
        return SnoozeGrant(until=None, patch=unsnoozing(), refused=grant.refused)
    return grant


def _granted_by_us(
    written: Mapping[str, str], *, until: datetime, bounds: SnoozeBounds, now: datetime
) -> bool:
    """The service's own grant: SNOOZE_GRANTED says this end, and a grant recorded in SNOOZES
    lies within the bound of it, so editing both ends alike still counts as a hand edit."""
    if until != parse_time(written.get(keys.SNOOZE_GRANTED, "")):
        return False
    recorded = (parse_time(part) for part in written.get(keys.SNOOZES, "").split(","))
    granted = [t for t in recorded if t is not None and t <= now]  # older than a day too
    return bool(granted) and until <= max(granted) + bounds.max_duration


def unsnoozing() -> dict[str, str | None]:
    """Removes the snooze (merge patch nulls); SNOOZES stays, it counts the day's grants."""
    return dict.fromkeys(SNOOZE_KEYS)


def grant_times(annotations: Mapping[str, str], *, now: datetime) -> list[datetime]:
    """When snoozes were granted in the 24 hours up to `now`, oldest first. A time that does
    not parse or lies ahead of now is dropped: it cannot have been our own grant."""
    written = (parse_time(part) for part in annotations.get(keys.SNOOZES, "").split(","))
    return sorted(t for t in written if t is not None and now - DAY < t <= now)


def latest_grant(annotations: Mapping[str, str], *, now: datetime) -> datetime | None:
    """When the latest snooze was granted, however long ago (None: never, as far as SNOOZES
    tells). A time ahead of now is dropped: it cannot have been our own grant."""
    written = (parse_time(part) for part in annotations.get(keys.SNOOZES, "").split(","))
    return max((t for t in written if t is not None and t <= now), default=None)


def _refusal(
    annotations: Mapping[str, str], *, until: datetime, bounds: SnoozeBounds, now: datetime
) -> str | None:
    if bounds.per_day <= 0:
        return "snoozes are off for this workload's rule (perDay 0)"
    if until <= now:
        return f"a snooze must end after now ({time_text(until)} is not)"
    if len(grant_times(annotations, now=now)) >= bounds.per_day:
        return f"{bounds.per_day} snoozes were already granted in the last 24 hours"
    return None
