"""Who manages a workload, and so how the service frees its GPUs (ISSUE 17).

Kueue's Workloads are deactivated (`spec.active: false`) and Kueue evicts them. A RayCluster
no Kueue Workload admits, under NVIDIA KAI Scheduler or under no queueing system at all, is
suspended (`spec.suspend: true`) and KubeRay deletes its pods. Which applies is decided per
RayCluster by `domain/policy/claims.py`; docs/ACTUATORS.md says what each writes and how to undo it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from autoscaler.domain.states import State


class Manager(StrEnum):
    """What admits a workload, and so which actuator writes on it."""

    KUEUE = "kueue"  # a Kueue Workload: its spec.active
    KAI = "kai"  # a RayCluster labelled with a KAI Scheduler queue: its spec.suspend
    KUBERAY = "kuberay"  # a RayCluster no queueing system admits: its spec.suspend


SUSPENDED_BY_US = frozenset({Manager.KAI, Manager.KUBERAY})  # the row IS the RayCluster

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PREFIX = "kueue.x-k8s.io/"  # any label or annotation of Kueue's marks an object Kueue's
KAI_QUEUE_LABEL = "kai.scheduler/queue"
KAI_PRIORITY_LABEL = "priorityClassName"  # KAI reads the priority class from this label
# KAI's GPU sharing: a pod asks for a share of a device by annotation, with no GPU request.
KAI_FRACTION_ANNOTATIONS = ("gpu-fraction", "gpu-memory")
# How KAI's queues are named in `domain/queues/facts.py` terms, by its queues' reader and by the
# rows
# of KAI-managed RayClusters alike: both must agree for the when-contended planner to match an
# idle row with the waiter it would let in.
KAI_FLAVOR = "kai"  # KAI has no flavors: one pseudo-flavor holds every KAI queue's GPUs
KAI_GPU = "nvidia.com/gpu"  # whole GPUs; KAI's GPU sharing (fractions) is not modelled
# Every KAI queue in one cohort: KAI reclaims across all its queues. The "/" keeps it apart
# from any Kueue cohort, whose names are DNS labels.
KAI_COHORT = "kai/all-queues"

_INACTIVE = {
    Manager.KUEUE: "spec.active is false",
    Manager.KAI: "spec.suspend is true",
    Manager.KUBERAY: "spec.suspend is true",
}
_PENDING = {
    Manager.KUEUE: "not admitted by Kueue",
    Manager.KAI: "no pod running yet (KAI Scheduler has not placed its gang)",
    Manager.KUBERAY: "no pod running yet",
}


def kai_cluster_queue(queue: str) -> str:
    """The ClusterQueue-like name of a KAI queue: "kai/<queue>" (never a Kueue name, which
    cannot hold a "/")."""
    return f"kai/{queue}"


def inactive_reason(manager: Manager) -> str:
    return _INACTIVE[manager]


def pending_reason(manager: Manager) -> str:
    return _PENDING[manager]


@dataclass(frozen=True)
class HandsOff:
    """Why the service must never act on a workload, whatever its usage: the state every
    surface reports (`unsupported`, `protected`) and the reason, read by the adapter."""

    state: State
    reason: str
