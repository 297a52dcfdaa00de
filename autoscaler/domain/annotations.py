"""The annotation keys users and the service write, how times are written in them, and the
audit annotations a deactivation writes. Exemptions are read from them in
`domain/exemptions.py`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

PREFIX = "idle-gpu-autoscaler.io/"
EXEMPT = PREFIX + "exempt"
EXEMPT_UNTIL = PREFIX + "exempt-until"
EXEMPT_BY = PREFIX + "exempt-by"
EXEMPT_REASON = PREFIX + "exempt-reason"
EXEMPT_SET_AT = PREFIX + "exempt-set-at"
DEACTIVATED_AT = PREFIX + "deactivated-at"
DEACTIVATED_REASON = PREFIX + "deactivated-reason"
DEACTIVATED_PEAK = PREFIX + "deactivated-peak-utilization"
DEACTIVATED_THRESHOLD = PREFIX + "deactivated-threshold"
DEACTIVATED_POLICY = PREFIX + "deactivated-policy"
DEACTIVATED_FOR = PREFIX + "deactivated-for"  # the waiting Workload it was for, if any
# What a stopped workload says of itself on every surface and every replica (read back by
# `domain/audit/stopped.py`): the rule that stopped it or the person who did, the waiter's
# ClusterQueue (told to readers of other namespaces instead of its name), the evidence.
DEACTIVATED_RULE = PREFIX + "deactivated-rule"
DEACTIVATED_BY = PREFIX + "deactivated-by"  # a person's "deactivate now"
DEACTIVATED_FOR_QUEUE = PREFIX + "deactivated-for-queue"
DEACTIVATED_COVERAGE = PREFIX + "deactivated-coverage"
DEACTIVATED_IDLE_SINCE = PREFIX + "deactivated-idle-since"
REACTIVATED_AT = PREFIX + "reactivated-at"
# A RayCluster we suspend (ISSUE 17): its spec.suspend before, "false" or "absent" (one
# suspended already is never ours to suspend), so reactivating restores exactly what was
# there. `suspend_was_text` writes it, `restored_suspend` reads it back.
SUSPEND_WAS = PREFIX + "suspend-was"
_SUSPEND_WAS_TEXT = {None: "absent", False: "false"}
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"

# The warning stage (ISSUE 15). On the Workload (the owner gets STOP_PLANNED_AT to show):
STOP_PLANNED_AT = PREFIX + "stop-planned-at"  # the promised stop time, RFC 3339
WARNED_AT = PREFIX + "warned-at"  # when the warning was written and sent
WARNED_UID = PREFIX + "warned-uid"  # the object it was given to: a re-created one is not warned
# A stop warning's keys, removed together when it is answered (snooze, exemption, all-clear).
WARNING_KEYS = (WARNED_AT, WARNED_UID, STOP_PLANNED_AT)
SNOOZED_UNTIL = PREFIX + "snoozed-until"  # "keep it" until then; people may write it by hand
SNOOZED_BY = PREFIX + "snoozed-by"
SNOOZE_REASON = PREFIX + "snooze-reason"
SNOOZE_GRANTED = PREFIX + "snooze-granted"  # the end the service granted: a differing
# SNOOZED_UNTIL is a hand edit, bounded (clipped, counted) like a request
SNOOZE_REQUESTED = PREFIX + "snooze-requested"  # the end asked for, when it was clipped
SNOOZES = PREFIX + "snoozes"  # when each snooze of the last 24 hours was granted, comma list
DELETE_PLANNED_AT = PREFIX + "delete-planned-at"  # rule action `delete`: its own warning
DELETE_WARNED_AT = PREFIX + "delete-warned-at"
IDLE_HELD_NOTIFIED_AT = PREFIX + "idle-held-notified-at"  # told once per admission
NOTIFY = PREFIX + "notify"  # on a namespace (annotation or label): its notification targets
# Rule `reclaim: via-kueue`: Kueue's own annotation (KEP-7990; pkg/controller/constants
# PriorityBoostAnnotationKey), and ours saying the boost is our mark and since when. We write
# and remove the boost only together with MARKED_AT: a boost without it is another's.
PRIORITY_BOOST = "kueue.x-k8s.io/priority-boost"
MARKED_AT = PREFIX + "marked-for-preemption-at"
MARK_KEYS = (PRIORITY_BOOST, MARKED_AT)


@dataclass(frozen=True)
class DeactivationAudit:
    """What the service writes on a Workload (with `spec.active: false`) and its owner."""

    at: datetime
    reason: str
    peak: float | None
    threshold: float
    policy: str  # a one-line summary of the policy in force
    beneficiary: str | None = None  # "namespace/name" of the waiter a contended stop is for
    beneficiary_queue: str | None = None  # the waiter's ClusterQueue
    rule: str | None = None  # the rule that stopped it (the loop's stops)
    by: str | None = None  # the person who stopped it ("deactivate now")
    coverage: float | None = None
    idle_since: datetime | None = None  # when the idle stretch that led to the stop began

    def annotations(self) -> dict[str, str]:
        written = {
            DEACTIVATED_AT: time_text(self.at),
            DEACTIVATED_REASON: self.reason,
            DEACTIVATED_PEAK: ratio_text(self.peak),
            DEACTIVATED_THRESHOLD: ratio_text(self.threshold),
            DEACTIVATED_POLICY: self.policy,
        }
        # Written on every stop, empty when there is none, so no key of an earlier stop (the
        # workload reactivated since) passes for this one's.
        written |= {
            DEACTIVATED_RULE: self.rule or "",
            DEACTIVATED_BY: self.by or "",
            DEACTIVATED_COVERAGE: ratio_text(self.coverage),
            DEACTIVATED_IDLE_SINCE: optional_time_text(self.idle_since) or "",
        }
        if self.beneficiary is not None:  # the stop's reason names it (read back only then)
            written[DEACTIVATED_FOR] = self.beneficiary
            written[DEACTIVATED_FOR_QUEUE] = self.beneficiary_queue or ""
        return written


@dataclass(frozen=True)
class NotOurs:
    """Why a RayCluster's spec.suspend is not ours to undo."""

    reason: str


def suspend_was_text(suspend: bool | None) -> str:
    """SUSPEND_WAS for a RayCluster whose spec.suspend is `suspend` (None: absent). Raises
    ValueError for True: a RayCluster suspended already is someone else's to undo."""
    if suspend is True:
        raise ValueError("spec.suspend is true already: not ours to suspend")
    return _SUSPEND_WAS_TEXT[suspend]


def restored_suspend(text: str | None) -> bool | NotOurs | None:
    """The spec.suspend to restore from SUSPEND_WAS (None: remove it); NotOurs for anything
    this service does not write, so a hand-written "true" never passes for our suspend."""
    if text is None:
        return NotOurs(f"not suspended by this service (no {SUSPEND_WAS} annotation of ours)")
    restored = {written: value for value, written in _SUSPEND_WAS_TEXT.items()}
    if text not in restored:
        return NotOurs(f"{SUSPEND_WAS} is {text!r}, never written by this service")
    return restored[text]


def parse_time(value: str) -> datetime | None:
    """RFC 3339 with a timezone, or None when it is not one (a naive time is ambiguous)."""
    try:  # RFC 3339 allows a lower-case "t" and "z"; fromisoformat does not
        parsed = datetime.fromisoformat(value.strip().upper().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def reactivated_at(*sources: Mapping[str, str]) -> datetime | None:
    """The latest reactivation the service recorded, which starts a fresh grace period."""
    times = [parse_time(a.get(REACTIVATED_AT, "")) for a in sources]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def reactivated_since(deactivated: datetime, *sources: Mapping[str, str]) -> bool:
    """Our reactivation recorded at or after that deactivation of ours: it no longer holds the
    workload stopped (reactivating keeps DEACTIVATED_AT, so a later stop by anyone else finds
    it still there)."""
    reactivated = reactivated_at(*sources)
    return reactivated is not None and reactivated >= deactivated


def deactivated_at(annotations: Mapping[str, str]) -> datetime | None:
    """When our last deactivation's patch applied, as its own annotation says."""
    return parse_time(annotations.get(DEACTIVATED_AT, ""))


def time_text(moment: datetime) -> str:
    """RFC 3339 to the second, UTC: how annotations write a time."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def promise_time(moment: datetime) -> datetime:
    """A promised time as an annotation can keep it without breaking the promise: rounded UP
    to the second (`time_text` drops the fraction, which would bring the time forward)."""
    whole = moment.replace(microsecond=0)
    return whole if whole == moment else whole + timedelta(seconds=1)


def ratio_text(value: float | None) -> str:
    """How audit annotations write a utilization ratio: `0.031`, or `unknown`."""
    return "unknown" if value is None else f"{value:.4g}"


def parse_ratio(text: str | None) -> float | None:
    """A ratio as `ratio_text` wrote it; None for "unknown", "nan" or a hand edit."""
    try:
        value = float(text) if text else math.nan
    except ValueError:
        return None
    return None if math.isnan(value) else value


def optional_time_text(moment: datetime | None) -> str | None:
    """`time_text`, or None for no time (a value left out, or an annotation removed)."""
    return None if moment is None else time_text(moment)
