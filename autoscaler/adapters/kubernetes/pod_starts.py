"""What the objects say about whether a workload's pods run (the not-running class,
domain/usage/not_running.py): each pod's waiting containers and PodScheduled condition, the
node autoscaler's TriggeredScaleUp Events, and the Workload's admission facts. Pure
translation, no I/O; `objects.py` calls it while parsing pods and Workloads.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from autoscaler.domain.annotations import parse_time
from autoscaler.domain.kueue_config import KueueConfiguration
from autoscaler.domain.models import PodInfo
from autoscaler.domain.usage.pod_states import (
    UNSCHEDULABLE,
    AdmissionFacts,
    ContainerWait,
    PodsReady,
)

Obj = Mapping[str, Any]
# The cluster autoscaler's Event on a pod it scales a node group up for (kubernetes/autoscaler
# cluster-autoscaler/core/scaleup/orchestrator/orchestrator.go); read with this field
# selector, which the API server serves for core/v1 Events (`reason`).
SCALE_UP_REASON = "TriggeredScaleUp"
SCALE_UP_SELECTOR = f"reason={SCALE_UP_REASON}"


def conditions_of(status: Obj) -> dict[str, Obj]:
    found = status.get("conditions") or []
    return {str(c.get("type")): c for c in found if isinstance(c, Mapping)}


def waiting_containers(
    pod: Obj, *, gpu_containers: Collection[str] = ()
) -> tuple[ContainerWait, ...]:
    """Its containers (init ones first) in state `waiting`, with the kubelet's reason and
    the image (the status's, else the spec's). `gpu_containers`: the containers (native
    sidecars and other init containers included) that request GPUs; none named, the pod
    counts as a whole and every container holds its GPUs."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    images = {
        str(c.get("name")): str(c.get("image") or "")
        for key in ("initContainers", "containers")
        for c in spec.get(key) or []
        if isinstance(c, Mapping)
    }
    found = []
    for key in ("initContainerStatuses", "containerStatuses"):
        for container in status.get(key) or []:
            waiting = ((container or {}).get("state") or {}).get("waiting")
            if not isinstance(waiting, Mapping):
                continue
            name = str(container.get("name") or "")
            found.append(
                ContainerWait(
                    container=name,
                    image=str(container.get("image") or images.get(name, "")),
                    reason=str(waiting.get("reason") or "Waiting"),
                    message=str(waiting.get("message") or ""),
                    holds_gpus=not gpu_containers or name in gpu_containers,
                )
            )
    return tuple(found)


def unschedulable_message(status: Obj) -> str | None:
    """The scheduler's message when PodScheduled is False for `Unschedulable`; else None."""
    scheduled = conditions_of(status).get("PodScheduled", {})
    if scheduled.get("status") == "False" and scheduled.get("reason") == UNSCHEDULABLE:
        return str(scheduled.get("message") or "")
    return None


@dataclass(frozen=True)
class PodsRead:
    """How a Workload's pods were read: whether they were at all (its owner kind has a pod
    selector), which resources are GPUs, the newest TriggeredScaleUp Event per
    (namespace, pod) (None: the Events could not be read), Kueue's Configuration as the
    cycle read it (None: not read), and how its pods were found and why that may have
    missed some."""

    read: bool = False
    gpu_resources: Sequence[str] = ()
    scale_ups: Mapping[tuple[str, str], datetime] | None = None
    kueue: KueueConfiguration | None = None
    found_by: str = ""  # e.g. "pod selector ray.io/cluster=rc"
    unsure: str | None = None  # why the pods found may not be all of them


NOT_READ = PodsRead()


def admission_facts(status: Obj, *, gpus: int, pods: PodsRead) -> AdmissionFacts:
    """What the status says of the admission beside the GPUs it charges: Kueue's PodsReady (there
    only with waitForPodsReady on), the latest reactivation (Requeued=True/Reactivated, kueue
    pkg/controller/core/workload_controller.go) and the admission checks still Pending."""
    conditions = conditions_of(status)
    ready, requeued = conditions.get("PodsReady"), conditions.get("Requeued", {})
    reactivated = requeued.get("status") == "True" and requeued.get("reason") == "Reactivated"
    checks = [c for c in status.get("admissionChecks") or [] if isinstance(c, Mapping)]
    return AdmissionFacts(
        gpus=gpus,
        pods_read=pods.read,
        scale_ups_read=pods.scale_ups is not None,
        reactivated_at=_time_of(requeued) if reactivated else None,
        pods_ready=PodsReady(str(ready.get("status")), str(ready.get("reason")), _time_of(ready))
        if ready is not None
        else None,
        pending_checks=tuple(str(c.get("name")) for c in checks if c.get("state") == "Pending"),
        kueue=pods.kueue,
        pods_found_by=pods.found_by,
        pods_unsure=pods.unsure,
    )


def _time_of(condition: Obj) -> datetime | None:
    return parse_time(str(condition.get("lastTransitionTime", "")))


def with_scale_ups(pods: Iterable[PodInfo], namespace: str, read: PodsRead) -> list[PodInfo]:
    """Each pod with the newest TriggeredScaleUp Event about it, when the Events were read."""
    found = read.scale_ups or {}
    return [
        replace(pod, scale_up_at=found[(namespace, pod.name)])
        if (namespace, pod.name) in found
        else pod
        for pod in pods
    ]


def scale_up_of(event: Obj) -> tuple[tuple[str, str], datetime] | None:
    """((namespace, pod), when) of a TriggeredScaleUp Event about a pod; None otherwise."""
    involved = event.get("involvedObject") or {}
    if event.get("reason") != SCALE_UP_REASON or involved.get("kind") != "Pod":
        return None
    stamps = (event.get(k) for k in ("lastTimestamp", "eventTime", "firstTimestamp"))
    at = next((t for s in stamps if s and (t := parse_time(str(s))) is not None), None)
    if at is None:
        return None
    return (str(involved.get("namespace") or ""), str(involved.get("name") or "")), at


def newest_scale_ups(
    found: Iterable[tuple[tuple[str, str], datetime]],
) -> dict[tuple[str, str], datetime]:
    """The newest scale-up time per pod."""
    newest: dict[tuple[str, str], datetime] = {}
    for pod, at in found:
        if pod not in newest or at > newest[pod]:
            newest[pod] = at
    return newest
