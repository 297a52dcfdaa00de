"""Exemptions as annotations: the one in force (for the loop, KEDA and the API alike), what
the API writes, and the length limit.

Pure: the current time and the limits are arguments. The keys the loop reads live in
`autoscaler.domain.annotations`; the few extra keys the API writes are here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.policy.management import SUSPENDED_BY_US

EXEMPT_UNTIL_REQUESTED = keys.PREFIX + "exempt-until-requested"  # the value before a cut
REACTIVATED_BY = keys.PREFIX + "reactivated-by"
REACTIVATED_REASON = keys.PREFIX + "reactivated-reason"
INDEFINITE = "indefinite"  # EXEMPT_UNTIL_REQUESTED when `exempt: "true"` was cut

EXEMPTION_KEYS = (
    keys.EXEMPT,
    keys.EXEMPT_UNTIL,
    keys.EXEMPT_BY,
    keys.EXEMPT_REASON,
    keys.EXEMPT_SET_AT,
    EXEMPT_UNTIL_REQUESTED,
)


@dataclass(frozen=True)
class Exemption:
    """An exemption in force, as the annotations tell it."""

    until: datetime | None  # None: indefinite
    source: str  # the annotation that says so: EXEMPT or EXEMPT_UNTIL
    on_owner: bool  # written on the owner rather than on the Workload
    by: str | None
    reason: str | None
    set_at: datetime | None
    requested_until: str | None  # the original value when the service cut it


def exempting(*, until: datetime, by: str, reason: str, now: datetime) -> dict[str, str | None]:
    """The annotations of an exemption made through the API (a previous cut is forgotten).
    An exemption answers a warning as a snooze does: the warning's keys go with it."""
    return {
        keys.EXEMPT_UNTIL: time_text(until),
        keys.EXEMPT_BY: by,
        keys.EXEMPT_REASON: reason,
        keys.EXEMPT_SET_AT: time_text(now),
        EXEMPT_UNTIL_REQUESTED: None,
        **dict.fromkeys(keys.WARNING_KEYS),
    }


def unexempting() -> dict[str, str | None]:
    """Removes every exemption annotation (merge patch nulls)."""
    return dict.fromkeys(EXEMPTION_KEYS)


def annotation_sources(workload: WorkloadInfo) -> tuple[tuple[bool, Mapping[str, str]], ...]:
    """Where a workload's exemption may be written, each with whether it is the owner's: the
    Workload's own annotations, then its owner's. A RayCluster we suspend ourselves is its own
    owner (the same annotations, written by the same patch), so it is one source, not two."""
    if workload.manager in SUSPENDED_BY_US:
        return ((False, workload.annotations),)
    return ((False, workload.annotations), (True, workload.owner_annotations))


def exemption_of(workload: WorkloadInfo, *, now: datetime) -> Exemption | None:
    """The exemption in force now: the Workload's own annotations first, then its owner's."""
    return _first_in_force(annotation_sources(workload), now=now)


def active_exemption(*sources: Mapping[str, str], now: datetime) -> Exemption | None:
    """The exemption in force now, from the first of `sources` that holds one: the Workload's
    annotations, then its owner's."""
    return _first_in_force(((index > 0, source) for index, source in enumerate(sources)), now=now)


def _first_in_force(
    sources: Iterable[tuple[bool, Mapping[str, str]]], *, now: datetime
) -> Exemption | None:
    for on_owner, source in sources:
        if is_indefinite(source):
            until, key = None, keys.EXEMPT
        else:
            until, key = keys.parse_time(source.get(keys.EXEMPT_UNTIL, "")), keys.EXEMPT_UNTIL
            if until is None or until <= now:
                continue
        return Exemption(
            until=until,
            source=key,
            on_owner=on_owner,
            by=source.get(keys.EXEMPT_BY),
            reason=source.get(keys.EXEMPT_REASON),
            set_at=keys.parse_time(source.get(keys.EXEMPT_SET_AT, "")),
            requested_until=source.get(EXEMPT_UNTIL_REQUESTED),
        )
    return None


def is_indefinite(annotations: Mapping[str, str]) -> bool:
    return annotations.get(keys.EXEMPT, "").strip().lower() == "true"


def cut_to_limit(
    annotations: Mapping[str, str],
    *,
    now: datetime,
    maximum: timedelta,
    allow_indefinite: bool,
) -> dict[str, str | None] | None:
    """The patch that cuts an over-long hand-set exemption to now + maximum, keeping the
    original in EXEMPT_UNTIL_REQUESTED; None when the annotations are within the limit."""
    limit = time_text(now + maximum)
    if is_indefinite(annotations) and not allow_indefinite:
        return {keys.EXEMPT: None, keys.EXEMPT_UNTIL: limit, EXEMPT_UNTIL_REQUESTED: INDEFINITE}
    original = annotations.get(keys.EXEMPT_UNTIL, "")
    until = keys.parse_time(original)
    if until is None or until <= now + maximum:
        return None
    return {keys.EXEMPT_UNTIL: limit, EXEMPT_UNTIL_REQUESTED: original}


def reactivating(*, by: str, reason: str, now: datetime) -> dict[str, str | None]:
    """Who brought a workload back and why; `reactivated-at` starts a fresh grace period."""
    return {
        keys.REACTIVATED_AT: time_text(now),
        REACTIVATED_BY: by,
        REACTIVATED_REASON: reason,
    }
