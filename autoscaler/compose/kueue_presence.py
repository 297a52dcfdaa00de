"""The start-up check of `actuators.kueue.enabled: false` beside a suspend actuator (ISSUE 17).

With Kueue's actuator off, no Workload is read, so nothing tells a RayCluster Kueue admits
without its queue label (`manageJobsWithoutQueueName`, a LocalQueue's defaulting) from a
plain or a KAI one: it would be suspended under Kueue's feet. So on a cluster that serves
Kueue's API that setting is refused before anything starts. An answer that cannot be had
(discovery failing) is not "not served": it is refused too, the safe side.
"""

from __future__ import annotations

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.resources import KUEUE_GROUP
from autoscaler.core.errors import ClusterError, ConfigError
from autoscaler.domain.policy.management import SUSPENDED_BY_US, Manager
from autoscaler.settings.tree import Settings


def refuse_kueue_off_beside_kueue(settings: Settings, client: KubeClient) -> None:
    """Raises ConfigError naming `actuators.kueue.enabled` when a suspend actuator is on, Kueue's
    is off, and the cluster serves (or may serve) kueue.x-k8s.io."""
    enabled = settings.actuators.enabled()
    if Manager.KUEUE in enabled or not enabled & SUSPENDED_BY_US:
        return
    try:
        served = client.group_versions(KUEUE_GROUP)
    except ClusterError as exc:
        found = f"whether the cluster serves {KUEUE_GROUP} is unknown ({exc})"
    else:
        if not served:
            return
        found = f"the cluster serves {KUEUE_GROUP} ({', '.join(served)})"
    raise ConfigError(
        [
            f"actuators.kueue.enabled: false, but {found}: a RayCluster Kueue admits without "
            "its queue label could not be told from a plain or a KAI one and would be "
            "suspended under Kueue; enable actuators.kueue (its Workloads are then read and "
            "such a RayCluster is left to them) or run where Kueue is not installed"
        ]
    )
