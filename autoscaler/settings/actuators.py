"""The `actuators:` section (ISSUE 17): which ways of freeing GPUs the service may use.

Kueue's (deactivate the Workload) is on by default; the two that suspend a RayCluster
directly are opt-in, since they act on objects no queueing system admits. Which one applies
to a RayCluster is decided by `domain/policy/claims.py`: a RayCluster a Kueue Workload admits is
never suspended, whatever is enabled here. docs/ACTUATORS.md has the whole story.
"""

from __future__ import annotations

from pydantic import Field

from autoscaler.domain.policy.management import Manager
from autoscaler.settings.base import Section


class KueueActuatorSettings(Section):
    enabled: bool = Field(
        True,
        description="Deactivate idle Kueue Workloads (`spec.active: false`). Off only on a "
        "cluster without Kueue: the service then reads no Workload at all.",
    )


class SuspendActuatorSettings(Section):
    enabled: bool = Field(
        False,
        description="Suspend idle RayClusters of this kind (`spec.suspend: true`, KubeRay "
        "1.1+); reactivating restores what was there. Opt-in. No new write right: it uses the "
        "`patch` on RayClusters that `cluster.ownerKinds.RayCluster` already grants (KAI's "
        "adds only `list` on its Queues and PodGroups).",
    )


class ActuatorSettings(Section):
    kueue: KueueActuatorSettings = Field(default_factory=KueueActuatorSettings)
    kai: SuspendActuatorSettings = Field(
        default_factory=SuspendActuatorSettings,
        description="RayClusters labelled `kai.scheduler/queue` (NVIDIA KAI Scheduler) that "
        "no Kueue Workload admits. Their pending PodGroups tell who waits.",
    )
    kuberay: SuspendActuatorSettings = Field(
        default_factory=SuspendActuatorSettings,
        description="Plain RayClusters: no Kueue Workload, no KAI queue, no controlling owner.",
    )

    def enabled(self) -> frozenset[Manager]:
        """The managers whose workloads the service may write on."""
        switches = {
            Manager.KUEUE: self.kueue.enabled,
            Manager.KAI: self.kai.enabled,
            Manager.KUBERAY: self.kuberay.enabled,
        }
        return frozenset(manager for manager, on in switches.items() if on)
