"""A RayCluster no Kueue Workload admits, read as a row of its own (ISSUE 17).

The row's `ref`, `uid` and `owner` are the RayCluster's, so rules selecting `ownerKinds:
[RayCluster]` and the REST permission "patch rayclusters/NAME" apply unchanged. Pure
translation, no I/O: readers raise ValueError (or KeyError/TypeError) on a malformed object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from autoscaler.adapters.kubernetes import objects
from autoscaler.adapters.kubernetes.objects import Obj
from autoscaler.adapters.kueue.context import NamespaceMeta
from autoscaler.domain.models import OwnerRef, PodInfo, State, WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.claims import Claim
from autoscaler.domain.policy.management import (
    KAI_FLAVOR,
    KAI_FRACTION_ANNOTATIONS,
    KAI_GPU,
    KAI_PRIORITY_LABEL,
    KAI_QUEUE_LABEL,
    HandsOff,
    Manager,
    kai_cluster_queue,
)

KIND, API_VERSION = "RayCluster", "ray.io/v1"


@dataclass(frozen=True)
class RayPod:
    """One pod of a RayCluster, with the GPU share it asks KAI for by annotation, if any."""

    pod: PodInfo
    share: str | None = None  # e.g. "gpu-fraction 0.5": a fractional GPU, not supported


def ray_pod(obj: Obj, gpu_resources: Sequence[str]) -> RayPod:
    annotations = objects.annotations_of(obj)
    shares = [f"{key} {annotations[key]}" for key in KAI_FRACTION_ANNOTATIONS if key in annotations]
    return RayPod(objects.parse_pod(obj, gpu_resources), shares[0] if shares else None)


def parse_raycluster(
    obj: Obj, *, pods: Iterable[RayPod], claim: Claim, namespace: NamespaceMeta | None
) -> WorkloadInfo:
    """The RayCluster as a row; `claim` names its manager (None: owned elsewhere, reported
    only); `namespace` None: its namespace's labels could not be read."""
    meta, spec = obj["metadata"], obj.get("spec") or {}
    labels, annotations = objects.labels_of(obj), objects.annotations_of(obj)
    name, uid = str(meta["name"]), str(meta.get("uid", ""))
    members = tuple(pods)
    manager = _manager(claim, labels)
    active = spec.get("suspend") is not True
    admitted = active and any(p.pod.phase_running for p in members)
    queue = labels.get(KAI_QUEUE_LABEL, "") if manager is Manager.KAI else ""
    gpus = sum(p.pod.gpus for p in members)
    return WorkloadInfo(
        ref=WorkloadRef(str(meta["namespace"]), name),
        uid=uid,
        queue=queue,
        owner=OwnerRef(API_VERSION, KIND, name, uid),
        active=active,
        admitted=admitted,
        admitted_at=min(p.pod.created_at for p in members) if admitted else None,
        created_at=objects.required_time(meta.get("creationTimestamp"), "creationTimestamp"),
        expected_pods=expected_pods(spec),
        pods=tuple(p.pod for p in members),
        priority_class=_priority_class(manager, labels, spec),
        annotations=annotations,
        owner_annotations=annotations,
        owner_labels=labels,
        cluster_queue=kai_cluster_queue(queue) if manager is Manager.KAI else None,
        resource_version=str(meta.get("resourceVersion", "")),
        namespace_labels=None if namespace is None else namespace.labels,
        namespace_annotations=None if namespace is None else namespace.annotations,
        admitted_usage={(KAI_FLAVOR, KAI_GPU): gpus} if manager is Manager.KAI and gpus else {},
        manager=manager,
        hands_off=_hands_off(claim, members),
    )


def expected_pods(spec: Obj) -> int:
    """The head and every worker group's replicas (times its hosts, for multi-host groups)."""
    total = 1
    for group in spec.get("workerGroupSpecs") or []:
        replicas = group.get("replicas", group.get("minReplicas", 0)) or 0
        total += int(replicas) * int(group.get("numOfHosts", 1) or 1)
    return total


def head_priority_class(spec: Obj) -> str | None:
    """The head pod template's spec.priorityClassName; None when absent or not a mapping on
    the way (the watch cache trims a RayCluster with it, before any validation)."""
    head = spec.get("headGroupSpec")
    template = head.get("template") if isinstance(head, Mapping) else None
    pod_spec = template.get("spec") if isinstance(template, Mapping) else None
    name = pod_spec.get("priorityClassName") if isinstance(pod_spec, Mapping) else None
    return str(name) if name else None


def _manager(claim: Claim, labels: Mapping[str, str]) -> Manager:
    """The claim's manager; for a RayCluster owned elsewhere (reported, never written) the
    one its labels point to."""
    if claim.manager is not None:
        return claim.manager
    return Manager.KAI if KAI_QUEUE_LABEL in labels else Manager.KUBERAY


def _priority_class(manager: Manager, labels: Mapping[str, str], spec: Obj) -> str | None:
    if manager is Manager.KAI and labels.get(KAI_PRIORITY_LABEL):
        return labels[KAI_PRIORITY_LABEL]
    return head_priority_class(spec)


def _hands_off(claim: Claim, pods: Sequence[RayPod]) -> HandsOff | None:
    shared = next((p for p in pods if p.share is not None), None)
    if shared is not None:
        why = f"KAI fractional GPUs ({shared.share} on pod {shared.pod.name}) are not supported"
        return HandsOff(State.UNSUPPORTED, f"{why}: never stopped")
    if claim.owned_elsewhere:
        return HandsOff(State.PROTECTED, claim.reason)
    return None
