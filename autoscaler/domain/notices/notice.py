"""What a workload's warning, snooze and planned stop are, and each rule's bounds on them
(ISSUE 15). Values only: the stage that reads them from annotations and turns them into
actions is `domain/notices/staging.py`; snoozes are granted and bounded in
`domain/notices/snoozes.py`.

Nothing here lives in memory between cycles: every time is read back from the Workload's
annotations (`domain/annotations.py`), so a restart or a missed cycle never shortens a notice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta


@dataclass(frozen=True)
class Notice:
    """A workload's notice as this cycle read it; every surface shows it."""

    warned_at: datetime | None = None  # a warning that counts (this UID, since admission)
    stop_at: datetime | None = None  # the stop's earliest time: max(promised, warned + lead)
    snoozed_until: datetime | None = None  # a snooze in force
    snoozed_by: str | None = None
    delete_at: datetime | None = None  # the deletion's earliest time (rule action `delete`)


NO_NOTICE = Notice()


@dataclass(frozen=True)
class SnoozeBounds:
    """What a rule lets people ask for; an admin's bound no annotation edit can pass."""

    max_duration: timedelta = timedelta(hours=24)  # one snooze at most this long (clipped)
    per_day: int = 3  # snoozes granted in any 24 hours; the next one is refused


@dataclass(frozen=True)
class NoticeRules:
    """A rule's warning stage and its last rung. The domain's default is no warning, so a
    policy built in code behaves as before; the settings' default (`policy.warnBefore`) is on."""

    warn_before: timedelta = timedelta(0)  # the least notice before a stop; 0: no warning
    snooze: SnoozeBounds = field(default_factory=SnoozeBounds)
    delete_after: timedelta | None = None  # inactive this long → delete (action `delete` only)
    notify: tuple[str, ...] = ()  # notification targets when the namespace names none
