"""What the simulated cluster's `ClusterReader` says of a RayCluster no Kueue Workload admits:
the row of its own that the lead's design gives it (ISSUE 17), as the real reader builds it.

Whose it is comes from the one place that decides it, `domain.claims.claim`; a RayCluster
no enabled actuator may suspend has no row. The row's owner is the RayCluster itself, so the
owner-kind rules apply unchanged; KAI's fractional GPUs make it hands-off (`unsupported`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from autoscaler.domain.models import OwnerRef, PodInfo, State, WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.claims import RayClusterFacts, claim
from autoscaler.domain.policy.management import (
    KAI_FLAVOR,
    KAI_GPU,
    KAI_PRIORITY_LABEL,
    HandsOff,
    Manager,
    kai_cluster_queue,
)
from autoscaler.sim.workload_info import sim_uid

if TYPE_CHECKING:
    from autoscaler.sim.rayclusters import RayClusterObject


def raycluster_row(
    ref: WorkloadRef,
    found: RayClusterObject,
    *,
    pods: tuple[PodInfo, ...],
    enabled: Collection[Manager],
    namespace_annotations: Mapping[str, str],
) -> WorkloadInfo | None:
    spec, labels = found.spec, found.spec.labels
    facts = RayClusterFacts(
        labels=labels, annotations=found.annotations, controller=None, admitting_workload=None
    )
    manager = claim(facts, enabled=enabled).manager
    if manager is None:
        return None
    active = found.suspend is not True
    kai = manager is Manager.KAI
    gpus = sum(pod.gpus for pod in pods)
    uid = sim_uid("RayCluster", ref)
    admitted = active and any(pod.running for pod in pods)
    return WorkloadInfo(
        ref=ref,
        uid=uid,
        queue=spec.queue if kai else "",
        owner=OwnerRef("ray.io/v1", "RayCluster", spec.name, uid),
        active=active,
        admitted=admitted,
        admitted_at=min(pod.created_at for pod in pods) if admitted else None,
        created_at=found.created_at,
        expected_pods=1 + sum(group.replicas for group in spec.workers),
        pods=pods,
        priority_class=labels.get(KAI_PRIORITY_LABEL) if kai else spec.priority_class,
        annotations=dict(found.annotations),
        owner_annotations=dict(found.annotations),
        owner_labels=labels,
        cluster_queue=kai_cluster_queue(spec.queue) if kai else None,
        resource_version=str(found.version),
        namespace_annotations=dict(namespace_annotations),
        admitted_usage={(KAI_FLAVOR, KAI_GPU): gpus} if kai and gpus else {},
        manager=manager,
        hands_off=_fractional(found, pods),
    )


def _fractional(found: RayClusterObject, pods: tuple[PodInfo, ...]) -> HandsOff | None:
    fraction = found.spec.gpu_fraction
    if fraction is None:
        return None
    pod = pods[0].name if pods else f"{found.spec.name}-head"
    reason = f"KAI fractional GPUs (gpu-fraction {fraction} on pod {pod}) are not supported"
    return HandsOff(State.UNSUPPORTED, f"{reason}: never stopped")
