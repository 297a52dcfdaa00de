"""The dispatcher's metrics: what happened to each notification, and how often it was retried.

A name the settings do not know is counted under target `unknown` (its outcome says so and
the log names it): a namespace annotation must not mint a metric series per name written.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from autoscaler.domain.notices.notifications import NoticeKind
from autoscaler.domain.program import METRIC_PREFIX

NOTIFY_METRIC_NAMES = (
    METRIC_PREFIX + "notifications_total",
    METRIC_PREFIX + "notification_retries_total",
)
SENT, FAILED, DROPPED, UNKNOWN_TARGET = "sent", "failed", "dropped", "unknown-target"
UNKNOWN = "unknown"


class NotificationMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._outcomes = Counter(
            METRIC_PREFIX + "notifications",
            "Notifications by target, kind and outcome (sent, failed after its retries, "
            "dropped by a full queue or at shutdown, unknown-target).",
            ["target", "kind", "outcome"],
            registry=registry,
        )
        self._retries = Counter(
            METRIC_PREFIX + "notification_retries",
            "Deliveries tried again after a failure that may pass (timeout, 5xx, 429).",
            ["target"],
            registry=registry,
        )

    def count(self, outcome: str, *, target: str | None, kind: NoticeKind) -> None:
        self._outcomes.labels(target=target or UNKNOWN, kind=kind.value, outcome=outcome).inc()

    def retried(self, target: str) -> None:
        self._retries.labels(target=target).inc()
