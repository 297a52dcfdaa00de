"""Kubernetes objects (kueue.x-k8s.io/v1beta2 dicts, v1beta1 spellings accepted) read into
the pure Kueue model; the status writers live in `kueue_status` and are re-exported here.

Simplifications: one ResourceFlavor per ClusterQueue (its `spec.nodeTaints` and
`spec.tolerations` read against each pod set's tolerations, `autoscaler/sim/flavors.py`); a
pod's requests are the sum of its containers' requests (limits where a request is missing),
at least the largest init container's, plus overhead; sidecar init containers are not
special.

Read for preemption: a ClusterQueue's `spec.preemption` and `spec.fairSharing.weight`; a
Workload's `metadata.uid`, its `kueue.x-k8s.io/job-uid` label (both named in Kueue's
preemption message), its `kueue.x-k8s.io/priority-boost` annotation (counted only when the
emulated Kueue's PriorityBoost gate is on) and the Evicted/Preempted conditions of a
preemption (so a victim keeps them until it is admitted again).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from autoscaler.sim.flavors import Taint, Toleration
from autoscaler.sim.kueue_model import Admission, LocalQueue, Phase, PodSet, Preempted, Workload
from autoscaler.sim.quota import (
    ClusterQueue,
    Preemption,
    PreemptionPolicy,
    QueueingStrategy,
    ResourceQuota,
)
from tests.support.kueue_status import cluster_queue_status, workload_status
from tests.support.quantity import parse_quantity, parse_time

__all__ = [
    "JOB_UID_LABEL",
    "PRIORITY_BOOST_ANNOTATION",
    "PRIORITY_CLASS_LABEL",
    "cluster_queue_from_object",
    "cluster_queue_status",
    "local_queue_from_object",
    "priority_class_from_object",
    "workload_from_object",
    "workload_status",
]

Obj = Mapping[str, Any]
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
# kueue pkg/controller/constants/constants.go: PriorityBoostAnnotationKey, JobUIDLabel.
PRIORITY_BOOST_ANNOTATION = "kueue.x-k8s.io/priority-boost"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
_SIGNED_INTEGER = re.compile(r"[+-]?[0-9]+")


def cluster_queue_from_object(
    obj: Obj, *, flavors: Mapping[str, Obj] | None = None
) -> ClusterQueue:
    """`flavors`: the ResourceFlavors by name, for the queue's flavor's taints and
    tolerations (a flavor not given has neither)."""
    spec = obj.get("spec", {})
    quotas: dict[str, ResourceQuota] = {}
    flavor_names: list[str] = []
    for group in spec.get("resourceGroups", []):
        listed = group.get("flavors", [])
        if len(listed) != 1:
            raise ValueError(f"ClusterQueue {obj['metadata']['name']}: one flavor per group only")
        flavor_names.append(listed[0]["name"])
        quotas.update({res["name"]: _resource_quota(res) for res in listed[0]["resources"]})
    return ClusterQueue(
        name=obj["metadata"]["name"],
        quotas=quotas,
        cohort=spec.get("cohortName") or spec.get("cohort") or None,  # v1beta2, v1beta1
        queueing_strategy=QueueingStrategy(spec.get("queueingStrategy", "BestEffortFIFO")),
        flavor=flavor_names[0] if flavor_names else "default-flavor",
        preemption=_preemption(spec.get("preemption") or {}),
        fair_weight=_fair_weight((spec.get("fairSharing") or {}).get("weight", 1)),
        **_flavor_nodes((flavors or {}).get(flavor_names[0]) if flavor_names else None),
    )


def _flavor_nodes(flavor: Obj | None) -> dict[str, Any]:
    """A ResourceFlavor's spec.nodeTaints and spec.tolerations, as the model's fields."""
    spec = (flavor or {}).get("spec") or {}
    taints = tuple(
        Taint(t["key"], t.get("value", ""), t["effect"]) for t in spec.get("nodeTaints") or []
    )
    return {"flavor_taints": taints, "flavor_tolerations": _tolerations(spec)}


def _tolerations(spec: Obj) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            key=t.get("key", ""),
            operator=t.get("operator", "Equal"),
            value=t.get("value", ""),
            effect=t.get("effect", ""),
        )
        for t in spec.get("tolerations") or []
    )


def local_queue_from_object(obj: Obj) -> LocalQueue:
    meta = obj["metadata"]
    return LocalQueue(meta["namespace"], meta["name"], obj["spec"]["clusterQueue"])


def priority_class_from_object(obj: Obj) -> tuple[str, int]:
    """A WorkloadPriorityClass as (name, value)."""
    return obj["metadata"]["name"], int(obj["value"])


def workload_from_object(
    obj: Obj,
    *,
    priority_classes: Mapping[str, int],
    now: datetime,
    excluded_resource_prefixes: Collection[str] = (),
) -> Workload:
    """A Workload object as the model sees it, its phase restored from its status.

    `now` stands in for a missing creationTimestamp. Resources starting with one of
    `excluded_resource_prefixes` are ignored, like Kueue's `resources.excludeResourcePrefixes`.
    """
    meta, spec = obj["metadata"], obj.get("spec", {})
    class_name = _priority_class_name(obj)
    priority = spec.get("priority")
    stamp = meta.get("creationTimestamp")
    workload = Workload(
        namespace=meta["namespace"],
        name=meta["name"],
        queue_name=spec.get("queueName", ""),
        created_at=now if stamp is None else parse_time(stamp),
        pod_sets=tuple(_pod_set(ps, excluded_resource_prefixes) for ps in spec.get("podSets", [])),
        priority=priority_classes.get(class_name or "", 0) if priority is None else int(priority),
        priority_class=class_name,
        priority_boost=_priority_boost(meta.get("annotations") or {}),
        uid=meta.get("uid"),
        job_uid=(meta.get("labels") or {}).get(JOB_UID_LABEL),
    )
    return _restore_phase(workload, obj.get("status", {}), active=spec.get("active", True))


# Helpers.


def _preemption(obj: Obj) -> Preemption:
    borrow = obj.get("borrowWithinCohort") or {}
    threshold = borrow.get("maxPriorityThreshold")
    return Preemption(
        within_cluster_queue=PreemptionPolicy(obj.get("withinClusterQueue", "Never")),
        reclaim_within_cohort=PreemptionPolicy(obj.get("reclaimWithinCohort", "Never")),
        borrow_within_cohort=borrow.get("policy", "Never") != "Never",
        max_priority_threshold=None if threshold is None else int(threshold),
    )


def _fair_weight(weight: object) -> float:
    """`spec.fairSharing.weight`, a quantity ("0.5", "500m", 2)."""
    text = str(weight)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


def _priority_boost(annotations: Mapping[str, str]) -> int:
    """The annotation as Go's strconv.ParseInt(value, 10, 32) reads it; 0 when absent or
    invalid (kueue pkg/util/priority/priority.go: Kueue's webhook rejects invalid values,
    EffectivePriority falls back to the base priority)."""
    value = annotations.get(PRIORITY_BOOST_ANNOTATION) or ""
    if not _SIGNED_INTEGER.fullmatch(value):
        return 0
    boost = int(value)
    return boost if -(2**31) <= boost < 2**31 else 0


def _resource_quota(resource: Obj) -> ResourceQuota:
    name = resource["name"]
    borrowing, lending = resource.get("borrowingLimit"), resource.get("lendingLimit")
    return ResourceQuota(
        nominal=parse_quantity(name, resource["nominalQuota"]),
        borrowing_limit=None if borrowing is None else parse_quantity(name, borrowing),
        lending_limit=None if lending is None else parse_quantity(name, lending),
    )


def _priority_class_name(obj: Obj) -> str | None:
    spec = obj.get("spec", {})
    ref = spec.get("priorityClassRef") or {}
    labels = obj["metadata"].get("labels") or {}
    name = ref.get("name") or spec.get("priorityClassName") or labels.get(PRIORITY_CLASS_LABEL)
    return None if name is None else str(name)


def _pod_set(obj: Obj, excluded: Collection[str]) -> PodSet:
    pod_spec = obj.get("template", {}).get("spec", {})
    requests: dict[str, int] = {}
    for container in pod_spec.get("containers", []):
        for resource, amount in _container_requests(container).items():
            requests[resource] = requests.get(resource, 0) + amount
    for container in pod_spec.get("initContainers", []):
        for resource, amount in _container_requests(container).items():
            requests[resource] = max(requests.get(resource, 0), amount)
    for resource, value in (pod_spec.get("overhead") or {}).items():
        requests[resource] = requests.get(resource, 0) + parse_quantity(resource, value)
    kept = {r: q for r, q in requests.items() if not any(r.startswith(p) for p in excluded)}
    return PodSet(
        name=obj.get("name", "main"),
        count=int(obj.get("count", 1)),
        requests=kept,
        tolerations=_tolerations(pod_spec),
    )


def _container_requests(container: Obj) -> dict[str, int]:
    resources = container.get("resources") or {}
    declared = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {resource: parse_quantity(resource, value) for resource, value in declared.items()}


def _restore_phase(workload: Workload, status: Obj, *, active: bool) -> Workload:
    conditions = {c["type"]: c for c in status.get("conditions", [])}
    evicted, requeued = conditions.get("Evicted"), conditions.get("Requeued")
    preempted = _read_preempted(conditions)
    fields: dict[str, Any] = {
        "evicted_at": None if evicted is None else _since(evicted),
        "requeued_at": _since(requeued)
        if requeued and requeued["status"] == "True" and requeued["reason"] != "Preempted"
        else None,
        "preempted": preempted,
    }
    by_preemption = (
        preempted is not None
        and evicted is not None
        and evicted["status"] == "True"
        and evicted["reason"] == "Preempted"
    )
    if by_preemption and preempted is not None:
        fields.update(phase_since=preempted.at, evicted_at=preempted.at)
    if not active:
        if by_preemption:  # stays evicted by the preemption: deactivation does not re-evict
            return replace(workload, phase=Phase.INACTIVE, **fields)
        since = workload.created_at if evicted is None else _since(evicted)
        return replace(workload, phase=Phase.INACTIVE, phase_since=since, evicted_at=since)
    admission = _read_admission(status, conditions)
    finished = conditions.get("Finished")
    if finished is not None and finished["status"] == "True":
        fields.update(phase=Phase.FINISHED, phase_since=_since(finished), admission=admission)
    elif admission is not None:
        fields.update(phase=Phase.ADMITTED, phase_since=admission.at, admission=admission)
    elif fields["requeued_at"] is not None:  # pending again since its reactivation
        fields.update(phase_since=fields["requeued_at"])
    return replace(workload, **fields)


def _read_preempted(conditions: Mapping[str, Obj]) -> Preempted | None:
    """The last preemption, from the Preempted condition (True, or False "Previously: ...")."""
    preempted = conditions.get("Preempted")
    if preempted is None:
        return None
    message = str(preempted.get("message", "")).removeprefix("Previously: ")
    return Preempted(str(preempted["reason"]), message, _since(preempted))


def _read_admission(status: Obj, conditions: Mapping[str, Obj]) -> Admission | None:
    reserved = conditions.get("QuotaReserved")
    admission = status.get("admission")
    if admission is None or reserved is None or reserved["status"] != "True":
        return None
    held: dict[str, int] = {}
    for assignment in admission.get("podSetAssignments", []):
        for resource, value in (assignment.get("resourceUsage") or {}).items():
            held[resource] = held.get(resource, 0) + parse_quantity(resource, value)
    return Admission(admission["clusterQueue"], _since(reserved), held)


def _since(condition: Obj) -> datetime:
    return parse_time(str(condition["lastTransitionTime"]))
