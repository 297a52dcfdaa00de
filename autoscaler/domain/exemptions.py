"""Exemptions as annotations: the one in force (for the loop, KEDA and the API alike), what
the API writes, and the length limit.

An exemption is read from the Workload's annotations, then its owner's. An owner the service
never writes (a Job, a StatefulSet, a Deployment, a pod: `annotated=False` in the owner kinds'
table) may still carry one a person set with kubectl; when it is too long, its bounded copy is
written on the Workload with EXEMPT_REPLACES naming the owner's value it replaces. While the
owner still says that value, the owner's is not read (the bound holds, and is not cut again);
once a person changes or removes it there, the Workload's copy is stale and the owner's new
value is read (and bounded afresh, once, if too long).

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
# On the Workload: the owner's hand-set value (`owner_value`) its exemption replaces, written
# where the owner is not the service's to write.
EXEMPT_REPLACES = keys.PREFIX + "exempt-replaces-owner-value"

EXEMPTION_KEYS = (
    keys.EXEMPT,
    keys.EXEMPT_UNTIL,
    keys.EXEMPT_BY,
    keys.EXEMPT_REASON,
    keys.EXEMPT_SET_AT,
    EXEMPT_UNTIL_REQUESTED,
    EXEMPT_REPLACES,
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


def exempting(
    *, until: datetime, by: str, reason: str, now: datetime, replaces: str | None = None
) -> dict[str, str | None]:
    """The annotations of an exemption made through the API (a previous cut is forgotten).
    An exemption answers a warning as a snooze does: the warning's keys go with it.
    `replaces`: written on the Workload because the owner is not ours to write, the owner's
    hand-set value (`owner_value`) it replaces, so that value is no longer read."""
    return {
        EXEMPT_REPLACES: replaces,
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


Sources = tuple[tuple[bool, Mapping[str, str]], ...]


def written_sources(workload: WorkloadInfo) -> Sources:
    """Where a workload's exemption may be written, each with whether it is the owner's: the
    Workload's own annotations, then its owner's. A RayCluster we suspend ourselves is its own
    owner (the same annotations, written by the same patch), so it is one source, not two."""
    if workload.manager in SUSPENDED_BY_US:
        return ((False, workload.annotations),)
    return ((False, workload.annotations), (True, workload.owner_annotations))


def annotation_sources(workload: WorkloadInfo) -> Sources:
    """The sources an exemption is read from (and bounded in): `written_sources`, less the
    one that no longer counts where the Workload's exemption replaced the owner's value."""
    if workload.manager in SUSPENDED_BY_US:
        return written_sources(workload)
    return _counting(workload.annotations, workload.owner_annotations)


def _counting(own: Mapping[str, str], owner: Mapping[str, str]) -> Sources:
    replaced = own.get(EXEMPT_REPLACES)
    if replaced is None:
        return ((False, own), (True, owner))
    if replaced == owner_value(owner):
        return ((False, own),)  # the owner's value, replaced (bounded) on the Workload
    return ((True, owner),)  # a person changed the owner's value since: that is the word


def owner_value(annotations: Mapping[str, str]) -> str | None:
    """An exemption as written by hand, in the words that decide it: INDEFINITE for
    `exempt: "true"`, else its `exempt-until` text; None without one."""
    if is_indefinite(annotations):
        return INDEFINITE
    return annotations.get(keys.EXEMPT_UNTIL) or None


def exemption_of(workload: WorkloadInfo, *, now: datetime) -> Exemption | None:
    """The exemption in force now: the Workload's own annotations first, then its owner's."""
    return _first_in_force(annotation_sources(workload), now=now)


def active_exemption(
    annotations: Mapping[str, str], owner_annotations: Mapping[str, str], *, now: datetime
) -> Exemption | None:
    """The exemption in force now, from a Workload's annotations, then its owner's (where the
    Workload's does not replace the owner's)."""
    return _first_in_force(_counting(annotations, owner_annotations), now=now)


def held_on_owner(workload: WorkloadInfo, *, now: datetime) -> Exemption | None:
    """The exemption in force written on the owner itself, replaced on the Workload or not:
    what taking an exemption away must remove there."""
    if workload.manager in SUSPENDED_BY_US:
        return None
    return _first_in_force(((True, workload.owner_annotations),), now=now)


def kubectl_removal(workload: WorkloadInfo) -> str:
    """The command that removes the exemption annotations a person set on the owner."""
    owner, namespace = workload.owner, workload.ref.namespace
    kind, name = (owner.kind, owner.name) if owner is not None else ("workload", workload.ref.name)
    written = [key for key in EXEMPTION_KEYS if key in workload.owner_annotations]
    removed = " ".join(f"{key}-" for key in written or (keys.EXEMPT, keys.EXEMPT_UNTIL))
    return f"kubectl annotate {kind.lower()} {name} -n {namespace} {removed}"


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


def replacing(
    annotations: Mapping[str, str], cut: Mapping[str, str | None]
) -> dict[str, str | None]:
    """The patch for the Workload that replaces an owner's over-long exemption (`annotations`,
    the owner's) with its cut: who set it and why come along, and EXEMPT_REPLACES names the
    owner's value, so it is read no more while it is unchanged."""
    return {
        keys.EXEMPT: None,
        keys.EXEMPT_BY: annotations.get(keys.EXEMPT_BY),
        keys.EXEMPT_REASON: annotations.get(keys.EXEMPT_REASON),
        keys.EXEMPT_SET_AT: annotations.get(keys.EXEMPT_SET_AT),
        **cut,
        EXEMPT_REPLACES: owner_value(annotations),
    }


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
