"""The demo's writes on workloads: one actuator per manager, as `serve` composes them
(ISSUE 17): Kueue's Workloads through the simulated Kueue, the RayClusters KAI Scheduler
queues through their simulated `spec.suspend`. Only the enabled ones are there."""

from __future__ import annotations

from collections.abc import Collection

from autoscaler.core.ports import Clock, WorkloadActuator
from autoscaler.domain.management import Manager
from autoscaler.engine.actuators import ActuatorByManager
from autoscaler.sim.actuator import SimulatedActuator
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.suspend_actuator import SimulatedSuspendActuator


def simulated_actuator(
    cluster: SimulatedCluster, *, clock: Clock, enabled: Collection[Manager]
) -> ActuatorByManager:
    every: dict[Manager, WorkloadActuator] = {
        Manager.KUEUE: SimulatedActuator(cluster=cluster, clock=clock),
        Manager.KAI: SimulatedSuspendActuator(cluster=cluster, clock=clock),
        Manager.KUBERAY: SimulatedSuspendActuator(cluster=cluster, clock=clock),
    }
    return ActuatorByManager({manager: every[manager] for manager in enabled})
