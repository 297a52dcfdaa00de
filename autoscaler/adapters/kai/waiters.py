"""Who waits under KAI Scheduler: the PodGroups with pods KAI has not placed, each with the
whole GPUs those pods ask for.

A PodGroup waits when any of its pods is Pending and bound to no node (KAI found no room for
it), or when its status says phase Pending. Its request is the sum over those pods, the gang
as a whole. A waiter whose queue is not a leaf queue read this cycle, or whose pods' requests
cannot be told in whole GPUs (a share of a GPU, a MIG slice, no pending pod found, none
asking for a GPU), is still a waiter: its queue is a stand-in of its own, outside the cohort,
marked `unmodelled` with the reason, so its fit is "unknown" and nothing is freed for it
(never "nobody waits").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from autoscaler.adapters.kai.naming import POD_GROUP_ANNOTATION
from autoscaler.adapters.kai.queue_tree import QueueTree
from autoscaler.adapters.kubernetes.objects import (
    MALFORMED,
    Obj,
    annotations_of,
    pod_gpus,
    required_time,
)
from autoscaler.adapters.kubernetes.resources import log_name
from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.policy.management import KAI_FRACTION_ANNOTATIONS, KAI_GPU, kai_cluster_queue
from autoscaler.domain.queues.facts import QueueQuota, Waiter

Key = tuple[str, str]  # (namespace, PodGroup name)
GPU_VENDOR_PREFIX = "nvidia.com/"  # any other NVIDIA device (MIG slices, shared GPUs)


@dataclass(frozen=True)
class KaiWaiters:
    """The waiters, the stand-in queues of those whose fit cannot be judged, and the
    PodGroups too malformed to read (name: why), left out and logged."""

    waiters: tuple[Waiter, ...]
    stand_ins: Mapping[str, QueueQuota]
    malformed: Mapping[str, str]


def pending_pods_by_group(pods: Iterable[Obj]) -> dict[Key, list[Obj]]:
    """Pending pods bound to no node, by the PodGroup their annotation names."""
    groups: dict[Key, list[Obj]] = defaultdict(list)
    for pod in pods:
        group = annotations_of(pod).get(POD_GROUP_ANNOTATION)
        status, spec = pod.get("status") or {}, pod.get("spec") or {}
        namespace = (pod.get("metadata") or {}).get("namespace")
        if group and namespace and status.get("phase") == "Pending" and not spec.get("nodeName"):
            groups[(str(namespace), group)].append(pod)
    return groups


def waiters_of(
    podgroups: Iterable[Obj], pending: Mapping[Key, Sequence[Obj]], tree: QueueTree
) -> KaiWaiters:
    """Every waiting PodGroup as a Waiter (see the module), oldest first."""
    waiters: list[Waiter] = []
    stand_ins: dict[str, QueueQuota] = {}
    malformed: dict[str, str] = {}
    for group in podgroups:
        try:
            waiter = _waiter_of(group, pending, tree)
        except MALFORMED as exc:
            malformed[log_name(group)] = str(exc)
            continue
        if isinstance(waiter, tuple):
            waiter, stand_in = waiter
            stand_ins[stand_in.name] = stand_in
        if waiter is not None:
            waiters.append(waiter)
    waiters.sort(key=lambda w: (w.created_at, w.ref.namespace, w.ref.name))
    return KaiWaiters(tuple(waiters), stand_ins, malformed)


def _waiter_of(
    group: Obj, pending: Mapping[Key, Sequence[Obj]], tree: QueueTree
) -> Waiter | tuple[Waiter, QueueQuota] | None:
    """None when the PodGroup does not wait; with a stand-in queue when its fit is unknown."""
    meta = group["metadata"]
    key = (str(meta["namespace"]), str(meta["name"]))
    pods = pending.get(key, ())
    if not pods and (group.get("status") or {}).get("phase") != "Pending":
        return None
    queue = str((group.get("spec") or {}).get("queue") or "")
    gpus, unreadable = _gpus(pods)
    doubt = _queue_doubt(queue, tree) or unreadable
    waiter = Waiter(
        ref=WorkloadRef(*key),
        uid=str(meta.get("uid") or ""),
        local_queue=queue,
        cluster_queue=kai_cluster_queue(queue),
        priority=0,  # KAI orders by queue fair share, then priority: not modelled
        created_at=_created(meta),
        requests={KAI_GPU: gpus},
    )
    if doubt is None:
        return waiter
    stand_in = _stand_in(waiter, doubt)
    return replace(waiter, cluster_queue=stand_in.name), stand_in


def _created(meta: Obj) -> datetime:
    return required_time(meta.get("creationTimestamp"), "PodGroup creationTimestamp")


def _queue_doubt(queue: str, tree: QueueTree) -> str | None:
    if not queue:
        return "it names no KAI queue"
    if queue in tree.parents:
        return f"its queue {queue} is a parent queue: KAI schedules only in leaf queues"
    if queue not in tree.leaves:
        return f"its queue {queue} is not among KAI's queues"
    if queue in tree.doubts:
        return f"the GPU limit of its queue {queue} cannot be told: {tree.doubts[queue]}"
    return None


def _gpus(pods: Sequence[Obj]) -> tuple[int, str | None]:
    """Whole GPUs the pods ask for together, or why that cannot be told."""
    if not pods:
        return 0, "its status says Pending but none of its pods waits unscheduled"
    total = 0
    for pod in pods:
        name = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        doubt = _pod_doubt(pod, name)
        if doubt is not None:
            return 0, doubt
        try:
            total += pod_gpus(pod, (KAI_GPU,))
        except (ValueError, TypeError, AttributeError) as exc:
            return 0, f"the GPU requests of pod {name} cannot be read: {exc}"
    if total == 0:
        return 0, f"none of its pending pods asks for a {KAI_GPU}: what frees room is unknown"
    return total, None


def _pod_doubt(pod: Obj, name: str) -> str | None:
    annotations = annotations_of(pod)
    for key in KAI_FRACTION_ANNOTATIONS:
        if key in annotations:
            return (
                f"pod {name} asks for a share of a GPU ({key} {annotations[key]}): "
                "KAI's GPU sharing is not modelled"
            )
    other = _other_devices(pod)
    if other:
        return f"pod {name} asks for {', '.join(other)}: only whole {KAI_GPU} is modelled"
    return None


def _other_devices(pod: Obj) -> list[str]:
    """NVIDIA device resources other than whole GPUs that the pod's containers ask for."""
    spec = pod.get("spec") or {}
    names = set()
    for container in [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        for section in ("requests", "limits"):
            names |= {
                str(name)
                for name, amount in (resources.get(section) or {}).items()
                if str(name).startswith(GPU_VENDOR_PREFIX)
                and str(name) != KAI_GPU
                and str(amount) not in ("0", "")
            }
    return sorted(names)


def _stand_in(waiter: Waiter, doubt: str) -> QueueQuota:
    """A queue of this waiter's own, outside every cohort, whose fit is unknown for `doubt`."""
    name = f"{waiter.cluster_queue} (PodGroup {waiter.ref})"
    return QueueQuota(name=name, cohort=None, groups=(), unmodelled=(doubt,))
