"""The soak's ground truth: was a deactivation right, and when was a workload truly due?

Judged on what the GPUs really did (the member's truth profile, at the exporter's sample
times), never on what the service could see (the telemetry, with its faults):
- wrongful: the workload is exempt, paused or protected; or it was in its grace period; or
  it had not run for a whole window since its (latest) admission; or any GPU sample in the
  window before the action was above the threshold;
- due: the first minute at which a deactivation would be right; missed: due long ago and
  still active at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from benchmarks.soak_fleet import NEVER_TOUCH, Member, minute_of

SCRAPE_S, OFFSET_S = 30, 7  # the simulated exporter's samples: epoch seconds 7, 37, 67, ...
MINUTE = timedelta(minutes=1)


@dataclass(frozen=True)
class Rules:
    window: timedelta
    grace: timedelta
    threshold_pct: float


def wrongful(member: Member, *, at: datetime, admitted: datetime, rules: Rules) -> str | None:
    """Why deactivating `member` at `at` was wrong, or None when it was right."""
    if member.kind in NEVER_TOUCH:
        return f"{member.kind}: never to be touched"
    if at < admitted + rules.grace:
        return "in its grace period"
    if at - rules.window < admitted:
        return "admitted less than a window before"
    busy = next((t for t in samples(at - rules.window, at) if _is_busy(member, t, rules)), None)
    return None if busy is None else f"busy at {busy:%H:%M:%S}"


def due_at(member: Member, *, admitted: datetime, until: datetime, rules: Rules) -> datetime | None:
    """The first cycle (whole minute) at which deactivating would be right; None if not by
    `until`."""
    if member.kind in NEVER_TOUCH:
        return None
    moment = _next_minute(admitted + max(rules.window, rules.grace))
    last_busy: datetime | None = None
    pending = iter(samples(admitted, until))
    sample = next(pending, None)
    while moment <= until:
        while sample is not None and sample <= moment:
            if _is_busy(member, sample, rules):
                last_busy = sample
            sample = next(pending, None)
        if last_busy is None or last_busy < moment - rules.window:
            return moment
        moment += MINUTE
    return None


def samples(since: datetime, until: datetime) -> list[datetime]:
    """The exporter's sample times in [since, until]."""
    low, high = int(since.timestamp()), int(until.timestamp())
    first = low + (OFFSET_S - low) % SCRAPE_S
    return [datetime.fromtimestamp(t, tz=UTC) for t in range(first, high + 1, SCRAPE_S)]


def _next_minute(moment: datetime) -> datetime:
    floor = moment.replace(second=0, microsecond=0)
    return floor if floor == moment else floor + MINUTE


def _is_busy(member: Member, moment: datetime, rules: Rules) -> bool:
    pct = member.truth.percent_at(minute_of(moment))
    return pct is not None and pct > rules.threshold_pct
