"""Notifications as the loop would hand them to the sink, so tests state only what differs.

warning = a_notification(NoticeKind.WARNING, "team-a", "rc")
cleared = a_notification(NoticeKind.ALL_CLEAR, "team-a", "rc", reason="busy again")
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from autoscaler.domain.models import OwnerRef, WorkloadRef
from autoscaler.domain.notices.notifications import NoticeKind, Notification
from tests.support.domain_builders import NOW

WARNED_AT = NOW - timedelta(minutes=1)
STOP_AT = WARNED_AT + timedelta(minutes=15)


def a_notification(
    kind: NoticeKind = NoticeKind.WARNING,
    namespace: str = "team-a",
    name: str = "rc",
    **changes: Any,
) -> Notification:
    """A two-GPU RayCluster's notification under rule `gpu`, decided at NOW; a warning
    carries the warning it was given at WARNED_AT and the stop at STOP_AT."""
    warning = kind is NoticeKind.WARNING
    built = Notification(
        kind=kind,
        workload=WorkloadRef(namespace, name),
        uid=f"uid-{namespace}-{name}",
        owner=OwnerRef("ray.io/v1", "RayCluster", name, uid=f"uid-{name}"),
        rule="gpu",
        reason="idle 62m: peak 1% < 5% over 60m",
        at=NOW,
        gpus=2,
        stop_at=STOP_AT if warning else None,
        warned_at=WARNED_AT if warning else None,
    )
    return replace(built, **changes)
