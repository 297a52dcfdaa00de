"""The `actuators:` section (ISSUE 17): which ways of freeing GPUs the service may use.

Kueue's (deactivate the Workload) is on by default; the two that suspend a RayCluster
directly are opt-in, since they act on objects no queueing system admits. Which one applies
to a RayCluster is decided by `domain/policy/claims.py`: a RayCluster a Kueue Workload admits is
never suspended, whatever is enabled here. docs/ACTUATORS.md has the whole story.

`check_actuators` makes the checks that need another section. A suspend actuator acts on rows
whose owner kind is RayCluster (the row is the RayCluster itself), so with
`cluster.ownerKinds.RayCluster` disabled every such row would be protected and the actuator
could never act: a file that says both is a mistake, caught at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from autoscaler.domain.policy.management import Manager
from autoscaler.settings.base import Section

if TYPE_CHECKING:  # the tree imports this module; only its type is needed here
    from autoscaler.settings.tree import Settings


class KueueActuatorSettings(Section):
    enabled: bool = Field(
        True,
        description="Deactivate idle Kueue Workloads (merge patch `spec.active: false`). Off "
        "only on a cluster without Kueue (KAI Scheduler alone, say): the service then reads no "
        "Workload, nor any kueue.x-k8s.io object, at all.",
    )


class SuspendActuatorSettings(Section):
    enabled: bool = Field(
        False,
        description="Suspend idle RayClusters of this kind (`spec.suspend: true`, KubeRay "
        "1.1+); reactivating restores what was there. Opt-in; needs "
        "`cluster.ownerKinds.RayCluster` enabled (the row is the RayCluster). No new write "
        "right: it uses the `patch` on RayClusters that owner kind already grants (KAI's adds "
        "only `list` on its Queues and PodGroups, who waits).",
    )


class ActuatorSettings(Section):
    kueue: KueueActuatorSettings = Field(
        default_factory=KueueActuatorSettings, description="Kueue Workloads."
    )
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


def check_actuators(settings: Settings) -> list[str]:
    """Every problem of `actuators:` against the rest of the file; empty when sound."""
    actuators = settings.actuators
    if not actuators.enabled():
        return [
            "actuators: every actuator is disabled, so the service could never free a GPU: "
            "enable at least one of kueue, kai, kuberay"
        ]
    ray = settings.cluster.owner_kinds.get("RayCluster")
    if ray is not None and ray.enabled:
        return []
    suspending = {"kai": actuators.kai.enabled, "kuberay": actuators.kuberay.enabled}
    return [
        f"actuators.{name}.enabled: its rows are RayClusters (owner kind RayCluster), but "
        "cluster.ownerKinds.RayCluster.enabled is false, so every one would be protected: "
        "enable that owner kind or disable this actuator"
        for name, enabled in suspending.items()
        if enabled
    ]
