"""What the service tells people (ISSUE 15): one value per message, whatever carries it.

The notifier adapters (`adapters/notify/`: a signed JSON webhook, Slack-compatible incoming
webhooks) shape it for their receiver; the dispatcher (`engine/notify/dispatch.py`) sends it to each
target with retries, and never on the loop's thread. The Kubernetes Event is always written
besides, so a namespace with no target still sees everything (`kubectl get events`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from autoscaler.domain.models import OwnerRef, State, WorkloadRef
from autoscaler.domain.policy.management import DEFAULT_MANAGER, Manager


class NoticeKind(StrEnum):
    WARNING = "warning"  # a stop is planned at `stop_at`: say "keep it" to snooze
    ALL_CLEAR = "all-clear"  # busy or loading again: the planned stop is off
    SNOOZED = "snoozed"  # someone said "keep it": nothing stops before `snoozed_until`
    DEACTIVATED = "deactivated"  # stopped: how to bring it back
    IDLE_HELD = "idle-held"  # some GPUs idle the whole window while others work: told once
    DELETE_WARNING = "delete-warning"  # inactive since our stop: deleted at `stop_at`
    DELETED = "deleted"


@dataclass(frozen=True)
class Notification:
    kind: NoticeKind
    workload: WorkloadRef
    uid: str
    owner: OwnerRef | None
    rule: str
    reason: str  # the decision's reason, as the decision log and the Event say it
    at: datetime  # when the service decided to send it
    gpus: int = 0
    stop_at: datetime | None = None  # WARNING: the planned stop; DELETE_WARNING: deletion
    warned_at: datetime | None = None  # WARNING: which warning a snooze link answers
    snoozed_until: datetime | None = None
    snoozed_by: str | None = None
    idle_held_gpus: int = 0
    # How it holds its GPUs (`domain/notices/held.py`): idle, or not running; and for the
    # latter what is wrong with its pods, for how long.
    held: State = State.IDLE
    wrong: str | None = None
    # Who stops it, so the words of what a stop means are its kind's (`policy/owner_words.py`).
    manager: Manager = DEFAULT_MANAGER


@dataclass(frozen=True)
class Link:
    """A signed "keep it" link in a notification: GET shows a confirm page, POST snoozes."""

    label: str  # "Keep 4h"
    url: str
    snooze: timedelta
