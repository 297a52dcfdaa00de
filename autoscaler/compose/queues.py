"""Who waits, for `serve`: Kueue's queues and KAI Scheduler's, each only when its actuator is
enabled, merged into one `PendingWork` when both are."""

from __future__ import annotations

import logging

from autoscaler.adapters.kai.queues import KaiQueues
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.queues import KueueQueues, QueueObjects
from autoscaler.core.ports import PendingWork
from autoscaler.domain.policy.management import Manager
from autoscaler.engine.cycle.queues import PendingWorkOf
from autoscaler.settings.tree import Settings


def build_pending(
    settings: Settings, *, client: KubeClient, objects: QueueObjects, logger: logging.Logger
) -> PendingWork | None:
    """None with neither actuator on: when-contended rules then stop nothing (no data)."""
    enabled = settings.actuators.enabled()
    sources: list[PendingWork] = []
    if Manager.KUEUE in enabled:  # a KAI-only cluster reads no kueue.x-k8s.io object
        sources.append(KueueQueues(client=client, objects=objects, logger=logger))
    if Manager.KAI in enabled:
        sources.append(KaiQueues(client=client, logger=logger.getChild("kai")))
    if not sources:
        return None
    return sources[0] if len(sources) == 1 else PendingWorkOf(*sources)
