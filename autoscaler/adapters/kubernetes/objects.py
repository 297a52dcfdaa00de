"""Pure translation between Kubernetes object dicts and domain values; no I/O.

Readers raise ValueError (or KeyError/TypeError) on a malformed object so the caller can skip
and log that one object. Kueue v1beta1 and v1beta2 Workloads are both understood.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from autoscaler.adapters.kubernetes.pod_starts import (
    NOT_READ,
    PodsRead,
    admission_facts,
    unschedulable_message,
    waiting_containers,
    with_scale_ups,
)
from autoscaler.core.documents import parse_json
from autoscaler.domain.annotations import PRIORITY_CLASS_LABEL, parse_time
from autoscaler.domain.models import (
    OwnerRef,
    Pauses,
    PodInfo,
    Preemption,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.domain.policy.owners import JOB_OWNER_GVK, JOB_OWNER_NAME, POD_GROUP_KEY
from autoscaler.domain.queues.quantity import parse_quantity
from autoscaler.domain.text import escape

Obj = Mapping[str, Any]  # an object as read: the readers never change it
# What reading a malformed object raises: each reader catches these to skip and log that one.
MALFORMED = (KeyError, TypeError, ValueError, AttributeError)
PAUSES_KEY = "pauses"  # runtime-state ConfigMap: {"everything": bool, "namespaces": [str]}
COMPONENT = "idle-gpu-autoscaler"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"


def _meta(obj: Obj) -> Obj:
    meta = obj["metadata"]
    if not isinstance(meta, Mapping):
        raise TypeError("metadata is not an object")
    return meta


def _strings(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def required_time(value: object, what: str) -> datetime:
    """An RFC 3339 time the object must carry; ValueError naming it and the raw value."""
    parsed = parse_time(str(value)) if value else None
    if parsed is None:
        raise ValueError(f"{what} is not an RFC 3339 time: {value!r}")
    return parsed


def labels_of(obj: Obj) -> dict[str, str]:
    return _strings(_meta(obj).get("labels"))


def annotations_of(obj: Obj) -> dict[str, str]:
    return _strings(_meta(obj).get("annotations"))


def _owner_refs(obj: Obj) -> list[OwnerRef]:
    return [
        OwnerRef(
            api_version=str(ref["apiVersion"]),
            kind=str(ref["kind"]),
            name=str(ref["name"]),
            uid=str(ref.get("uid", "")),
        )
        for ref in _meta(obj).get("ownerReferences") or []
        if isinstance(ref, Mapping)
    ]


def controller_owner(obj: Obj) -> OwnerRef | None:
    """The ownerReference marked `controller: true`, the object that made this one."""
    for ref in _meta(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return OwnerRef(
                api_version=str(ref["apiVersion"]),
                kind=str(ref["kind"]),
                name=str(ref["name"]),
                uid=str(ref.get("uid", "")),
            )
    return None


def _annotated_owner(workload: Obj, refs: list[OwnerRef]) -> OwnerRef | None:
    """The owner a Workload's job-owner annotations name ("apps/v1, Kind=StatefulSet")."""
    annotations = annotations_of(workload)
    gvk, name = annotations.get(JOB_OWNER_GVK, ""), annotations.get(JOB_OWNER_NAME, "")
    api_version, found, kind = gvk.partition(", Kind=")
    if not (found and kind and name):
        return None
    api_version = api_version.lstrip("/")  # the core group prints as "/v1"
    uid = next((r.uid for r in refs if (r.kind, r.name) == (kind, name)), "")
    return OwnerRef(api_version=api_version, kind=kind, name=name, uid=uid)


def workload_owner(workload: Obj) -> OwnerRef | None:
    """The object a Workload is for: its controller owner (kueue jobframework/reconciler.go);
    for a StatefulSet, a LeaderWorkerSet or a pod group (several ownerReferences, none
    `controller`: statefulset_reconciler.go, leaderworkerset_reconciler.go, pod_controller.go)
    the one its job-owner annotations name, else its reference that is not a pod, else its
    first pod by name."""
    if (controller := controller_owner(workload)) is not None:
        return controller
    refs = _owner_refs(workload)
    if (annotated := _annotated_owner(workload, refs)) is not None:
        return annotated
    sets = [r for r in refs if (r.api_version, r.kind) != ("v1", "Pod")]
    if sets:
        return sets[0]
    return min(refs, key=lambda ref: ref.name, default=None)


def _is_gpu(resource: str, gpu_resources: Sequence[str]) -> bool:
    return any(
        resource.startswith(name[:-1]) if name.endswith("*") else resource == name
        for name in gpu_resources
    )


def _container_gpus(container: Obj, gpu_resources: Sequence[str]) -> int:
    resources = container.get("resources") or {}
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    total = Decimal(0)
    for name in {*limits, *requests}:
        if _is_gpu(name, gpu_resources):
            try:  # an extended resource's request defaults to, and must equal, its limit
                total += Decimal(str(limits.get(name, requests.get(name))))
            except InvalidOperation as exc:
                raise ValueError(f"{name} is not a whole number of devices") from exc
    return int(total)


def pod_gpus(pod: Obj, gpu_resources: Sequence[str]) -> int:
    """GPU devices or MIG slices a pod holds: its containers' sum, or its largest init
    container's, whichever is more (how the scheduler sizes a pod)."""
    spec = pod.get("spec") or {}
    main = sum(_container_gpus(c, gpu_resources) for c in spec.get("containers") or [])
    init = [_container_gpus(c, gpu_resources) for c in spec.get("initContainers") or []]
    return max([main, *init])


def gpu_containers(pod: Obj, gpu_resources: Sequence[str]) -> frozenset[str]:
    """The names of its containers and init containers (native sidecars among them) that
    request GPUs: only these say whether its GPU work runs."""
    spec = pod.get("spec") or {}
    return frozenset(
        str(c.get("name"))
        for key in ("initContainers", "containers")
        for c in spec.get(key) or []
        if _container_gpus(c, gpu_resources) > 0
    )


def parse_pod(pod: Obj, gpu_resources: Sequence[str]) -> PodInfo:
    meta, status = _meta(pod), pod.get("status") or {}
    return PodInfo(
        name=str(meta["name"]),
        phase=str(status.get("phase") or "Unknown"),
        created_at=required_time(meta.get("creationTimestamp"), "pod creationTimestamp"),
        gpus=pod_gpus(pod, gpu_resources),
        labels=_strings(meta.get("labels")),
        node=(pod.get("spec") or {}).get("nodeName"),
        waiting=waiting_containers(pod, gpu_containers=gpu_containers(pod, gpu_resources)),
        unschedulable=unschedulable_message(status),
        controller=controller_owner(pod),
        pod_group=annotations_of(pod).get(POD_GROUP_KEY) or labels_of(pod).get(POD_GROUP_KEY, ""),
    )


def _conditions(status: Obj) -> dict[str, Obj]:
    found = status.get("conditions") or []
    return {str(c.get("type")): c for c in found if isinstance(c, Mapping)}


# Kueue's preemption message (pkg/scheduler/preemption/preemption.go, `preemptionMessage`).
_PREEMPTOR_UID = re.compile(r"Preempted to accommodate a workload \(UID: ([^,)]+)")


def _preemption(conditions: Mapping[str, Obj]) -> Preemption | None:
    """Kueue's record of a preemption, as preemption.go writes it with workload/evict's
    `Evict` (Evicted=True, reason `Preempted`) and `SetPreemptedCondition` (Preempted=True, its
    reason InClusterQueue, InCohortReclamation, ...); both carry the same message."""
    evicted, preempted = conditions.get("Evicted", {}), conditions.get("Preempted", {})
    if preempted.get("status") == "True":
        found = preempted
    elif evicted.get("status") == "True" and evicted.get("reason") == "Preempted":
        found = evicted
    else:
        return None
    matched = _PREEMPTOR_UID.search(str(found.get("message") or ""))
    uid = matched.group(1).strip() if matched else ""
    return Preemption(
        preemptor_uid="" if uid == "UNKNOWN" else uid,
        reason=str(found.get("reason") or ""),
        at=parse_time(str(found.get("lastTransitionTime", ""))),
    )


def _expected_pods(spec: Obj, admission: Obj) -> int:
    """The admitted pod sets' counts when Kueue recorded them, else the requested ones."""
    assigned = admission.get("podSetAssignments") or []
    if assigned and all(isinstance(a.get("count"), int) for a in assigned):
        return sum(int(a["count"]) for a in assigned)
    return sum(int(p.get("count", 1)) for p in spec.get("podSets") or [])


def _priority_class(spec: Obj, owner_labels: Mapping[str, str]) -> str | None:
    reference = spec.get("priorityClassRef") or {}  # v1beta2
    name = reference.get("name") or spec.get("priorityClassName")  # v1beta1
    return str(name) if name else owner_labels.get(PRIORITY_CLASS_LABEL)


def admitted_usage(admission: Obj) -> dict[tuple[str, str], int]:
    """What an admission charges its ClusterQueue by (flavor, resource): each pod set's
    resourceUsage under the flavor assigned to that resource."""
    usage: dict[tuple[str, str], int] = {}
    for assignment in admission.get("podSetAssignments") or []:
        flavors = assignment.get("flavors") or {}
        for resource, value in (assignment.get("resourceUsage") or {}).items():
            if (flavor := flavors.get(resource)) is not None:  # no flavor: no quota charged
                key = (str(flavor), str(resource))
                usage[key] = usage.get(key, 0) + parse_quantity(str(resource), value)
    return usage


def _charged_gpus(admission: Obj, gpu_resources: Sequence[str]) -> int:
    """The GPUs an admission charges its ClusterQueue, whatever their flavors."""
    charged = admitted_usage(admission)
    return sum(n for (_, resource), n in charged.items() if _is_gpu(resource, gpu_resources))


def queue_name_of(workload: Obj) -> str:
    """The Workload's LocalQueue: spec.queueName, else the queue-name label; "" for none. The
    queue reader (`adapters/kueue/queue_objects.py`) reads it the same way."""
    spec = workload.get("spec") or {}
    labels = (workload.get("metadata") or {}).get("labels") or {}
    return str(spec.get("queueName") or labels.get(QUEUE_NAME_LABEL) or "")


def priority_of(workload: Obj) -> int:
    """The Workload's spec.priority (from its WorkloadPriorityClass); 0 when unset."""
    return int((workload.get("spec") or {}).get("priority") or 0)


def cluster_queue_of(
    workload: Obj, admission: Obj, local_queues: Mapping[tuple[str, str], str] | None
) -> str:
    """Its admission names the ClusterQueue; a Workload not admitted (pending, or evicted by a
    preemption, which clears status.admission) goes to its LocalQueue's; "" when unknown."""
    if admitted_to := admission.get("clusterQueue"):
        return str(admitted_to)
    namespace = str(_meta(workload)["namespace"])
    return (local_queues or {}).get((namespace, queue_name_of(workload)), "")


def parse_workload(
    workload: Obj,
    *,
    owner: Obj | None = None,
    pods: Iterable[PodInfo] = (),
    namespace_labels: Mapping[str, str] | None = None,
    namespace_annotations: Mapping[str, str] | None = None,
    cohorts: Mapping[str, str | None] | None = None,
    pods_read: PodsRead = NOT_READ,
    owner_ref: OwnerRef | None = None,
    local_queues: Mapping[tuple[str, str], str] | None = None,
) -> WorkloadInfo:
    """A Workload joined with its owner object (when read) and the owner's pods; with the
    labels and annotations of its namespace (None: unreadable), the ClusterQueues' cohorts,
    each LocalQueue's ClusterQueue, and how the pods were read (for the not-running class)."""
    meta, spec = _meta(workload), workload.get("spec") or {}
    status = workload.get("status") or {}
    admission, conditions = status.get("admission") or {}, _conditions(status)
    admitted, finished = conditions.get("Admitted", {}), conditions.get("Finished", {})
    evicted = conditions.get("Evicted", {})
    # Kueue leaves Admitted=True on a finished Workload (pkg/workload/finish/finish.go,
    # SetFinishedCondition) and its cache releases the quota: not admitted for us.
    is_finished = finished.get("status") == "True"
    is_admitted = admitted.get("status") == "True" and not is_finished
    is_evicted = evicted.get("status") == "True"
    owner_labels = labels_of(owner) if owner is not None else {}
    return WorkloadInfo(
        ref=WorkloadRef(str(meta["namespace"]), str(meta["name"])),
        uid=str(meta.get("uid", "")),
        queue=queue_name_of(workload),
        owner=owner_ref or workload_owner(workload),
        active=spec.get("active", True) is not False,
        admitted=is_admitted,
        admitted_at=parse_time(str(admitted.get("lastTransitionTime", "")))
        if is_admitted
        else None,
        created_at=required_time(meta.get("creationTimestamp"), "workload creationTimestamp"),
        expected_pods=_expected_pods(spec, admission),
        pods=tuple(with_scale_ups(pods, str(meta["namespace"]), pods_read)),
        priority_class=_priority_class(spec, owner_labels),
        annotations=_strings(meta.get("annotations")),
        owner_annotations=annotations_of(owner) if owner is not None else {},
        owner_labels=owner_labels,
        cluster_queue=(queue := cluster_queue_of(workload, admission, local_queues)) or None,
        resource_version=str(meta.get("resourceVersion", "")),
        evicted_reason=str(evicted.get("reason")) if is_evicted else None,
        evicted_at=parse_time(str(evicted.get("lastTransitionTime", ""))) if is_evicted else None,
        namespace_labels=namespace_labels,
        namespace_annotations=namespace_annotations,
        cohort=(cohorts or {}).get(queue),
        priority=priority_of(workload),
        admitted_usage=admitted_usage(admission),
        admission=admission_facts(
            status, gpus=_charged_gpus(admission, pods_read.gpu_resources), pods=pods_read
        ),
        finished_at=parse_time(str(finished.get("lastTransitionTime", "")))
        if is_finished
        else None,
        preemption=_preemption(conditions),
    )


def parsed_or_why(workload: Obj) -> WorkloadInfo | str:
    """The Workload parsed alone, or why it cannot be (text, which a cache may keep)."""
    try:
        return parse_workload(workload)
    except MALFORMED as exc:
        return str(exc)


def pauses_from_data(data: Mapping[str, str]) -> Pauses:
    """Read the kill switches; an unreadable value pauses everything (fail safe)."""
    text = data.get(PAUSES_KEY, "").strip()
    if not text:
        return Pauses()
    parsed = parse_json(text)
    namespaces = parsed.get("namespaces") or []
    if not isinstance(parsed.get("everything", False), bool) or not isinstance(namespaces, list):
        raise ValueError(f"{PAUSES_KEY}: expected {{'everything': bool, 'namespaces': [str]}}")
    return Pauses(
        everything=parsed.get("everything", False), namespaces=frozenset(str(n) for n in namespaces)
    )


def pauses_to_data(pauses: Pauses) -> dict[str, str]:
    body = {"everything": pauses.everything, "namespaces": sorted(pauses.namespaces)}
    return {PAUSES_KEY: json.dumps(body, sort_keys=True)}


def micro_time(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_for(
    target: OwnerRef, *, namespace: str, reason: str, message: str, now: datetime
) -> dict[str, Any]:
    """A core/v1 Event about `target`, named like client-go names them (name.hexnanos)."""
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    nanos = int(now.timestamp()) * 10**9 + now.microsecond * 1000
    involved = {
        "apiVersion": target.api_version,
        "kind": target.kind,
        "name": target.name,
        "namespace": namespace,
        **({"uid": target.uid} if target.uid else {}),
    }
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{target.name}.{nanos:x}", "namespace": namespace},
        "involvedObject": involved,
        "reason": reason,
        "message": escape(message)[:1024],  # printed by kubectl; the API server's limit
        "type": "Normal",
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": COMPONENT,
        "action": reason,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "eventTime": micro_time(now),
        "count": 1,
    }
