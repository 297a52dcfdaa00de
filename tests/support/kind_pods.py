"""Pods as the kinds' controllers create them, and as Kueue's pod webhook admits them.

Kueue's pod webhook (kueue pkg/controller/jobs/pod/pod_webhook.go, Default) gates a new pod
with `kueue.x-k8s.io/admission` when a parent marked it (`kueue.x-k8s.io/pod-suspending-parent`,
set on the templates of Deployments, StatefulSets and LeaderWorkerSets by their webhooks), or
when it carries a queue label itself and no ancestor is a job Kueue manages. A gated pod waits
in Pending/SchedulingGated; any other pod runs at once (the scheduler and the kubelet).
"""

from __future__ import annotations

import copy
from datetime import datetime

from tests.support import kueue_pod_sets as sets
from tests.support.kind_store import QUEUE_LABEL, Object, owner_reference, rfc3339


def child_pod(
    owner: Object,
    name: str,
    template: Object,
    *,
    now: datetime,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> Object:
    """A pod made from `template`, controlled by `owner`, gated when Kueue manages it."""
    meta = template.get("metadata") or {}
    pod_labels = {**meta.get("labels", {}), **(labels or {})}
    pod_annotations = {**meta.get("annotations", {}), **(annotations or {})}
    pod: Object = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": owner["metadata"]["namespace"],
            "labels": pod_labels,
            "annotations": pod_annotations,
            "ownerReferences": [owner_reference(owner)],
            "creationTimestamp": rfc3339(now),
        },
        "spec": copy.deepcopy(template["spec"]),
    }
    return admitted_by_webhook(pod, now=now)


def admitted_by_webhook(pod: Object, *, now: datetime) -> Object:
    """The pod as it is stored: gated and Pending when Kueue manages it, else Running."""
    meta = pod["metadata"]
    if sets.SUSPENDING_PARENT in meta.get("annotations", {}) or QUEUE_LABEL in meta["labels"]:
        meta["labels"][sets.MANAGED_LABEL] = "true"
        gates = pod["spec"].setdefault("schedulingGates", [])
        gates.append({"name": sets.ADMISSION_GATE})
        pod["status"] = {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                }
            ],
        }
    else:
        pod["status"] = {"phase": "Running", "startTime": rfc3339(now)}
    return pod


def suspended_by_parent(template: Object, parent: str, queue: str) -> Object:
    """The pod template as Kueue's webhook for a Deployment, StatefulSet or LeaderWorkerSet
    leaves it (kueue pkg/controller/jobs/deployment/deployment_webhook.go, Default)."""
    changed = copy.deepcopy(template)
    meta = changed.setdefault("metadata", {})
    meta.setdefault("annotations", {})[sets.SUSPENDING_PARENT] = parent
    meta.setdefault("labels", {}).update({sets.MANAGED_LABEL: "true", QUEUE_LABEL: queue})
    return changed


def in_group(pod: Object, workload: str, *, total: int, role: str = "main") -> Object:
    """A pod of a prebuilt pod-group Workload: its name in the group and prebuilt labels
    (kueue pkg/controller/jobs/statefulset/statefulset_pod_reconciler.go, setDefault)."""
    meta = pod["metadata"]
    meta["labels"].update({sets.POD_GROUP_LABEL: workload, sets.PREBUILT_LABEL: workload})
    meta["annotations"].update(
        {
            sets.POD_GROUP_TOTAL: str(total),
            "kueue.x-k8s.io/role-hash": role,
        }
    )
    return pod
