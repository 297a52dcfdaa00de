"""Our own JSON for a notification (schema version 1), what a webhook target receives.

Field names are camelCase like the rest of our API; times are RFC 3339 in UTC; absent values
are null rather than left out, so a receiver can rely on every key being there.
docs/NOTIFICATIONS.md shows an example and how to verify the signature.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from autoscaler.adapters.notify.wording import word
from autoscaler.domain.annotations import optional_time_text, time_text
from autoscaler.domain.notices.notifications import Link, Notification
from autoscaler.domain.policy.owner_words import named, stop_words

SCHEMA_VERSION = 1


def as_json(notification: Notification, *, links: Sequence[Link]) -> dict[str, Any]:
    n = notification
    wording = word(n)
    stop = stop_words(n.owner, manager=n.manager)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "kind": n.kind.value,
        "workload": {"namespace": n.workload.namespace, "name": n.workload.name, "uid": n.uid},
        "owner": None
        if n.owner is None
        else {"kind": n.owner.kind, "name": n.owner.name, "display": named(n.workload, n.owner)},
        "rule": n.rule,
        "reason": n.reason,
        "title": wording.title,
        "text": wording.text,
        "command": wording.hint,
        "at": time_text(n.at),
        "stopAt": optional_time_text(n.stop_at),
        "warnedAt": optional_time_text(n.warned_at),
        "snoozedUntil": optional_time_text(n.snoozed_until),
        "snoozedBy": n.snoozed_by,
        "gpus": n.gpus,
        "idleHeldGpus": n.idle_held_gpus,
        "stopMeans": stop.said,
        "bringBack": stop.bring_back,
        "stopLasts": stop.lasts,
        "links": [_link(link) for link in links],
    }


def _link(link: Link) -> dict[str, Any]:
    return {
        "label": link.label,
        "url": link.url,
        "snoozeSeconds": int(link.snooze.total_seconds()),
    }
