"""The demo's writes on workloads: the simulated twin of each enabled manager's actuator
(`sim/actuators.py`) behind one `ActuatorByManager`, as `serve` composes the real ones."""

from __future__ import annotations

from collections.abc import Collection

from autoscaler.core.ports import Clock
from autoscaler.domain.policy.management import Manager
from autoscaler.engine.acting.by_manager import ActuatorByManager
from autoscaler.sim.actuators import simulated_actuators
from autoscaler.sim.cluster import SimulatedCluster


def simulated_actuator(
    cluster: SimulatedCluster, *, clock: Clock, enabled: Collection[Manager]
) -> ActuatorByManager:
    return ActuatorByManager(simulated_actuators(cluster, clock=clock, enabled=enabled))
