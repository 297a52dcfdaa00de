"""Kueue Workload builder, shaped like the Workloads Kueue writes (v1beta2 by default).

Kueue names a RayCluster's Workload `raycluster-<name>-<5 hex>`, makes the RayCluster its
controller owner, labels it `kueue.x-k8s.io/job-uid`, and copies one pod set per Ray group
("head", then each worker group). Admission sets status.admission and the QuotaReserved and
Admitted conditions; deactivation (spec.active=false) ends in Evicted/InactiveWorkload.
"""

from __future__ import annotations

import copy
import hashlib
from datetime import datetime
from typing import Self

from .common import Builder, Object, container, metadata, pod_requests, timestamp
from .ray import PRIORITY_CLASS_LABEL, QUEUE_LABEL

KUEUE_V1BETA2 = "kueue.x-k8s.io/v1beta2"
KUEUE_V1BETA1 = "kueue.x-k8s.io/v1beta1"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
DEACTIVATED = "InactiveWorkload"  # Kueue's eviction reason when spec.active is false


def workload_name_for(owner: Object) -> str:
    """Kueue's naming scheme: lower-case kind, owner name, a short hash of the owner."""
    meta = owner["metadata"]
    digest = hashlib.sha1(f"{owner['kind']}/{meta['name']}/{meta['uid']}".encode()).hexdigest()
    return f"{owner['kind'].lower()}-{meta['name']}-{digest[:5]}"


def _assignment(pod_set: Object, flavor: str) -> Object:
    requests = pod_requests(pod_set["template"])
    count = pod_set["count"]
    return {
        "name": pod_set["name"],
        "count": count,
        "flavors": dict.fromkeys(requests, flavor),
        "resourceUsage": {resource: str(qty * count) for resource, qty in requests.items()},
    }


class WorkloadBuilder(Builder):
    def owned_by(self, owner: Object) -> Self:
        """The owner's controller reference and the job-uid label, as Kueue sets them."""
        meta = owner["metadata"]
        self._obj["metadata"]["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        return self.label(JOB_UID_LABEL, meta["uid"])

    def pod_set(
        self,
        name: str,
        *,
        count: int = 1,
        gpus: int = 0,
        cpu: int = 1,
        template: Object | None = None,
    ) -> Self:
        """A pod set of `count` pods; `template` (copied) wins over gpus/cpu."""
        if template is None:
            template = {"spec": {"containers": [container(name, gpus=gpus, cpu=cpu)]}}
        pod_template = {"metadata": {}, **copy.deepcopy(template)}
        self._obj["spec"]["podSets"].append(
            {"name": name, "count": count, "template": pod_template}
        )
        return self

    def queue(self, name: str) -> Self:
        self._obj["spec"]["queueName"] = name
        return self

    def priority_class(self, name: str, *, value: int = 100) -> Self:
        """A WorkloadPriorityClass reference (v1beta2 form; build() converts for v1beta1)."""
        self._obj["spec"]["priority"] = value
        self._obj["spec"]["priorityClassRef"] = {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": name,
        }
        return self

    def active(self, active: bool = True) -> Self:
        self._obj["spec"]["active"] = active
        return self

    def condition(
        self, kind: str, *, at: datetime, status: bool = True, reason: str, message: str = ""
    ) -> Self:
        """Set (replace) one status condition."""
        conditions = self._obj.setdefault("status", {}).setdefault("conditions", [])
        conditions[:] = [c for c in conditions if c["type"] != kind]
        conditions.append(
            {
                "type": kind,
                "status": "True" if status else "False",
                "reason": reason,
                "message": message,
                "lastTransitionTime": timestamp(at),
            }
        )
        return self

    def quota_reserved(
        self, *, at: datetime, cluster_queue: str = "cluster-queue", flavor: str = "default-flavor"
    ) -> Self:
        """Quota reserved (status.admission set), not yet Admitted."""
        self._obj.setdefault("status", {})["admission"] = {
            "clusterQueue": cluster_queue,
            "podSetAssignments": [_assignment(p, flavor) for p in self._obj["spec"]["podSets"]],
        }
        return self.condition(
            "QuotaReserved",
            at=at,
            reason="QuotaReserved",
            message=f"Quota reserved in ClusterQueue {cluster_queue}",
        )

    def admitted(
        self, *, at: datetime, cluster_queue: str = "cluster-queue", flavor: str = "default-flavor"
    ) -> Self:
        """Admitted at `at`; call after adding the pod sets (assignments mirror them)."""
        self.quota_reserved(at=at, cluster_queue=cluster_queue, flavor=flavor)
        return self.condition(
            "Admitted", at=at, reason="Admitted", message="The workload is admitted"
        )

    def admission_check(self, name: str, *, state: str, at: datetime) -> Self:
        """An admission check's state in status.admissionChecks (Pending, Ready, Retry,
        Rejected: kueue apis/kueue/v1beta2/workload_types.go, AdmissionCheckState)."""
        checks = self._obj.setdefault("status", {}).setdefault("admissionChecks", [])
        checks[:] = [c for c in checks if c["name"] != name]
        checks.append(
            {"name": name, "state": state, "message": "", "lastTransitionTime": timestamp(at)}
        )
        return self

    def evicted(self, *, at: datetime, reason: str = DEACTIVATED) -> Self:
        """What Kueue does after spec.active=false: quota released, admission cleared."""
        if reason == DEACTIVATED:
            self.active(False)
        self._obj.get("status", {}).pop("admission", None)
        self.condition("QuotaReserved", at=at, status=False, reason=reason, message="Evicted")
        self.condition("Admitted", at=at, status=False, reason=reason, message="Evicted")
        return self.condition(
            "Evicted", at=at, reason=reason, message="The workload is deactivated"
        )

    def finished(self, *, at: datetime, reason: str = "Succeeded") -> Self:
        return self.condition("Finished", at=at, reason=reason, message="Job finished")

    def build(self, api_version: str = KUEUE_V1BETA2) -> Object:
        """The Workload in `api_version`; v1beta1 names the priority class with
        spec.priorityClassName and priorityClassSource instead of spec.priorityClassRef."""
        obj = super().build()
        obj["apiVersion"] = api_version
        reference = obj["spec"].get("priorityClassRef")
        if api_version == KUEUE_V1BETA1 and reference:
            del obj["spec"]["priorityClassRef"]
            obj["spec"]["priorityClassName"] = reference["name"]
            obj["spec"]["priorityClassSource"] = "kueue.x-k8s.io/workloadpriorityclass"
        return obj


def make_workload(namespace: str, name: str) -> WorkloadBuilder:
    """An active Workload with no pod sets yet (add at least one: the CRD requires it)."""
    return WorkloadBuilder(
        {
            "apiVersion": KUEUE_V1BETA2,
            "kind": "Workload",
            "metadata": metadata("Workload", namespace, name),
            "spec": {"active": True, "podSets": []},
        }
    )


def make_workload_for(raycluster: Object) -> WorkloadBuilder:
    """The Workload Kueue creates for `raycluster` (or a RayJob: its cluster's pod sets):
    name, owner, pod sets, queue, priority."""
    meta = raycluster["metadata"]
    spec = raycluster["spec"].get("rayClusterSpec", raycluster["spec"])
    builder = make_workload(meta["namespace"], workload_name_for(raycluster)).owned_by(raycluster)
    builder.pod_set("head", count=1, template=spec["headGroupSpec"]["template"])
    for group in spec.get("workerGroupSpecs", []):
        builder.pod_set(
            group["groupName"], count=group.get("replicas", 1), template=group["template"]
        )
    labels = meta.get("labels", {})
    if QUEUE_LABEL in labels:
        builder.queue(labels[QUEUE_LABEL])
    if PRIORITY_CLASS_LABEL in labels:
        builder.priority_class(labels[PRIORITY_CLASS_LABEL])
    return builder
