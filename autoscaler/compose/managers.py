"""Each manager's parts as `serve` builds them (the managers' table is
`domain/policy/management.py`): the actuator that writes on its workloads, and the reader of
who waits under it, if it has queues of its own. Only the enabled managers' are built; the
writes go through one `ActuatorByManager`, the waiters merge into one `PendingWork`.

A new manager is a row of `WIRING` here, with its builders.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from autoscaler.adapters.kai.queues import KaiQueues
from autoscaler.adapters.kuberay.actuator import SuspendActuator
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.actuator import KueueActuator
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.kueue.queues import KueueQueues, QueueObjects
from autoscaler.core.ports import Clock, PendingWork, WorkloadActuator
from autoscaler.domain.kueue_config import KueueConfiguration
from autoscaler.domain.policy.management import MANAGERS, Manager
from autoscaler.engine.acting.by_manager import ActuatorByManager
from autoscaler.engine.cycle.queues import PendingWorkOf
from autoscaler.settings.rules import enabled_owner_kinds
from autoscaler.settings.tree import Settings


@dataclass(frozen=True)
class ActuatorParts:
    """What a manager's actuator is built from."""

    settings: Settings
    client: KubeClient
    cluster: KueueCluster
    clock: Clock


@dataclass(frozen=True)
class QueueParts:
    """What a manager's reader of who waits is built from."""

    client: KubeClient
    objects: QueueObjects  # Kueue's queue objects, as the cluster reader holds them
    logger: logging.Logger
    # Kueue's Configuration as the cycle's cluster read found it (no request of its own)
    configuration: Callable[[], KueueConfiguration | None] | None = None


@dataclass(frozen=True)
class Wiring:
    actuator: Callable[[ActuatorParts], WorkloadActuator]
    waiting: Callable[[QueueParts], PendingWork] | None = None  # None: no queues of its own


def _kueue_actuator(parts: ActuatorParts) -> WorkloadActuator:
    return KueueActuator(
        client=parts.client,
        workloads=parts.cluster.workload_resource,
        clock=parts.clock,
        owner_kinds=enabled_owner_kinds(parts.settings),
    )


def _suspend_actuator(parts: ActuatorParts) -> WorkloadActuator:
    return SuspendActuator(client=parts.client, clock=parts.clock)


def _kueue_queues(parts: QueueParts) -> PendingWork:
    return KueueQueues(
        client=parts.client,
        objects=parts.objects,
        logger=parts.logger,
        configuration=parts.configuration,
    )


def _kai_queues(parts: QueueParts) -> PendingWork:
    return KaiQueues(client=parts.client, logger=parts.logger.getChild("kai"))


WIRING: Mapping[Manager, Wiring] = {
    Manager.KUEUE: Wiring(actuator=_kueue_actuator, waiting=_kueue_queues),
    Manager.KAI: Wiring(actuator=_suspend_actuator, waiting=_kai_queues),
    Manager.KUBERAY: Wiring(actuator=_suspend_actuator),
}


def _enabled(settings: Settings) -> list[Manager]:
    """The enabled managers, in the table's order."""
    enabled = settings.actuators.enabled()
    return [manager for manager in MANAGERS if manager in enabled]


def build_actuator(
    settings: Settings, *, client: KubeClient, cluster: KueueCluster, clock: Clock
) -> ActuatorByManager:
    """One actuator per enabled manager: Kueue's Workload patch, the RayCluster suspend."""
    parts = ActuatorParts(settings=settings, client=client, cluster=cluster, clock=clock)
    return ActuatorByManager({m: WIRING[m].actuator(parts) for m in _enabled(settings)})


def build_pending(
    settings: Settings,
    *,
    client: KubeClient,
    objects: QueueObjects,
    logger: logging.Logger,
    configuration: Callable[[], KueueConfiguration | None] | None = None,
) -> PendingWork | None:
    """Who waits, under each enabled manager that has queues (a KAI-only cluster reads no
    kueue.x-k8s.io object), merged when several do. None when none does: when-contended
    rules then stop nothing (no data). `configuration`: Kueue's Configuration as the
    cycle read it, for whether Kueue runs with fair sharing."""
    parts = QueueParts(client=client, objects=objects, logger=logger, configuration=configuration)
    readers = [WIRING[m].waiting for m in _enabled(settings)]
    sources = [reader(parts) for reader in readers if reader is not None]
    if not sources:
        return None
    return sources[0] if len(sources) == 1 else PendingWorkOf(*sources)
