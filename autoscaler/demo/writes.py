"""The demo's writes on workloads: one actuator per manager, as `serve` composes them
(ISSUE 17): Kueue's Workloads through the simulated Kueue, the RayClusters KAI Scheduler
queues through their simulated `spec.suspend`. Only the enabled ones are there."""

from __future__ import annotations

from collections.abc import Collection

from autoscaler.core.ports import Clock, WorkloadActuator
from autoscaler.domain.policy.management import SUSPENDED_BY_US, Manager
from autoscaler.engine.acting.by_manager import ActuatorByManager
from autoscaler.sim.actuator import SimulatedActuator
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.suspend_actuator import SimulatedSuspendActuator


def simulated_actuator(
    cluster: SimulatedCluster, *, clock: Clock, enabled: Collection[Manager]
) -> ActuatorByManager:
    """Kueue's actuator when enabled, and one suspend actuator for the managers whose
    RayClusters the service suspends itself (`compose.serve.build_actuator`'s shape)."""
    actuators: dict[Manager, WorkloadActuator] = {}
    if Manager.KUEUE in enabled:
        actuators[Manager.KUEUE] = SimulatedActuator(cluster=cluster, clock=clock)
    suspend = SimulatedSuspendActuator(cluster=cluster, clock=clock)
    actuators.update(dict.fromkeys(frozenset(enabled) & SUSPENDED_BY_US, suspend))
    return ActuatorByManager(actuators)
