"""The loop's actions counted by kind and outcome (ISSUE 15): warnings, all-clears, idle-held
notices, deletion warnings and deletions beside the deactivations, so a dashboard shows how
often people are warned for each stop, and a failing write shows at once."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from autoscaler.domain.models import Snapshot
from autoscaler.domain.program import METRIC_PREFIX

ACTIONS_METRIC = METRIC_PREFIX + "actions"


class ActionCounter:
    """Subscribe `observe` to the snapshot store; every replica counts its own actions (a
    follower attempts none)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.actions = Counter(
            ACTIONS_METRIC,
            "Actions the loop attempted, by kind (deactivate, warn, all-clear, notify-idle-held, "
            "warn-delete, delete) and outcome (done, skipped, failed, unknown).",
            ["action", "outcome"],
            registry=registry,
        )

    def observe(self, snapshot: Snapshot) -> None:
        for record in snapshot.actions:
            self.actions.labels(action=record.action.value, outcome=record.outcome.kind).inc()
