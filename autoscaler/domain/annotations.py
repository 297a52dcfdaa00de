"""The annotation keys users and the service write, and reading exemptions from them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

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
REACTIVATED_AT = PREFIX + "reactivated-at"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"


@dataclass(frozen=True)
class Exemption:
    until: datetime | None  # None: indefinite
    source: str  # which annotation said so


def parse_time(value: str) -> datetime | None:
    """RFC 3339 with a timezone, or None when it is not one (a naive time is ambiguous)."""
    try:  # RFC 3339 allows a lower-case "t" and "z"; fromisoformat does not
        parsed = datetime.fromisoformat(value.strip().upper().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def active_exemption(*sources: Mapping[str, str], now: datetime) -> Exemption | None:
    """The exemption in force now, from the Workload's or its owner's annotations."""
    for source in sources:
        if source.get(EXEMPT, "").strip().lower() == "true":
            return Exemption(until=None, source=EXEMPT)
        until = parse_time(source.get(EXEMPT_UNTIL, ""))
        if until is not None and until > now:
            return Exemption(until=until, source=EXEMPT_UNTIL)
    return None


def reactivated_at(*sources: Mapping[str, str]) -> datetime | None:
    """The latest reactivation the service recorded, which starts a fresh grace period."""
    times = [parse_time(a.get(REACTIVATED_AT, "")) for a in sources]
    known = [t for t in times if t is not None]
    return max(known) if known else None
