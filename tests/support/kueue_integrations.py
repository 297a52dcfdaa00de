"""Kueue's job integrations in miniature: a Workload for each queued object, and what Kueue
does to the object when its Workload is admitted or not.

- Job kinds (batch Job, JobSet, the Kubeflow training jobs of `kubeflow_kinds`, TrainJob,
  AppWrapper): created suspended (the webhook; suspended here if it was not), one Workload
  controlled by the job, unsuspended on admission and suspended again on eviction (kueue
  pkg/controller/jobframework/reconciler.go, ReconcileGenericJob: "job is suspended" /
  "stopping the job"). A batch Job's one pod set is "main" of `parallelism` pods (kueue
  pkg/controller/jobs/job/job_controller.go, PodSets); only a Job carrying a queue label is
  queued, not a JobSet's (nor an MPIJob's launcher).
- StatefulSet: one prebuilt Workload owned (not controlled) by the set, then by each of its
  pods (kueue pkg/controller/jobs/statefulset/statefulset_reconciler.go, constructWorkload;
  pkg/controller/jobs/pod/pod_controller.go, EnsureWorkloadOwnedByAllMembers).
- LeaderWorkerSet: one Workload per group (kueue pkg/controller/jobs/leaderworkerset/
  leaderworkerset_reconciler.go), owned by the set and by the group's pods, none controller.
- Pods (plain, a Deployment's, a Notebook's): gated pods Kueue manages form a Workload each,
  or one per pod group (label kueue.x-k8s.io/pod-group-name) once the whole group exists,
  owned by the pods (kueue pkg/controller/jobs/pod/pod_controller.go,
  ConstructComposableWorkload); admission removes the gate, eviction deletes the pods that
  are not gated any more (Pod.Stop).
"""

from __future__ import annotations

import copy
from datetime import datetime

from autoscaler.domain.models import WorkloadRef
from autoscaler.sim.kueue_model import KueueState, Phase
from tests.support import kueue_pod_sets as sets
from tests.support.kind_pods import admitted_by_webhook
from tests.support.kind_store import (
    QUEUE_LABEL,
    KindStore,
    Object,
    is_owned_by,
    owner_reference,
    rfc3339,
)
from tests.support.kubeflow_kinds import KUBEFLOW_KINDS, SUSPEND_PATH

PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"

# Where each job kind keeps its suspend flag.
SUSPEND_PATHS: dict[str, tuple[str, ...]] = {
    "Job": ("suspend",),
    "JobSet": ("suspend",),
    **{kind: SUSPEND_PATH for kind in KUBEFLOW_KINDS},
    "TrainJob": ("suspend",),
    "AppWrapper": ("suspend",),
}


def is_suspended(obj: Object) -> bool:
    node = obj["spec"]
    for key in SUSPEND_PATHS[obj["kind"]]:
        node = node.get(key, {}) if isinstance(node, dict) else {}
    return node is True


def with_suspend(obj: Object, suspended: bool) -> Object:
    changed = copy.deepcopy(obj)
    *parents, leaf = SUSPEND_PATHS[obj["kind"]]
    node = changed["spec"]
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = suspended
    return changed


def is_gated(pod: Object) -> bool:
    return any(g["name"] == sets.ADMISSION_GATE for g in pod["spec"].get("schedulingGates", []))


class KueueIntegrations:
    def __init__(self, kinds: KindStore) -> None:
        self._kinds = kinds

    # Workloads for what is queued.

    def create_workloads(self, *, now: datetime) -> None:
        self._gate_new_plain_pods(now=now)
        for kind in SUSPEND_PATHS:
            for obj in self._kinds.list(kind):
                if _queue(obj):
                    self._job_workload(obj)
        for sts in self._kinds.list("StatefulSet"):
            if _queue(sts) and sts["spec"].get("replicas", 1) > 0:
                self._ensure(
                    sts, sets.owner_workload_name(sts), sets.statefulset_pod_sets(sts["spec"])
                )
        for lws in self._kinds.list("LeaderWorkerSet"):
            if _queue(lws):
                for index in range(lws["spec"].get("replicas", 1)):
                    name = sets.owner_workload_name(lws, suffix=str(index))
                    self._ensure(lws, name, sets.leaderworkerset_pod_sets(lws["spec"]))
        self._pod_workloads()

    def _gate_new_plain_pods(self, *, now: datetime) -> None:
        """Kueue's pod webhook for a pod a user applied with a queue label and no owner
        (the controllers' pods pass through it as they are made: `kind_pods.child_pod`)."""
        for pod in self._kinds.list("Pod"):
            meta = pod["metadata"]
            labels = meta.get("labels") or {}
            if (
                QUEUE_LABEL in labels
                and sets.MANAGED_LABEL not in labels
                and not meta.get("ownerReferences")
            ):
                fresh = copy.deepcopy(pod)
                fresh["metadata"]["labels"] = dict(labels)
                self._kinds.write(admitted_by_webhook(fresh, now=now))

    def _job_workload(self, job: Object) -> None:
        name = sets.owner_workload_name(job)
        if self._kinds.find("Workload", job["metadata"]["namespace"], name) is None:
            if not is_suspended(job):  # what the webhook would have done on creation
                job = self._kinds.write(with_suspend(job, True))
            self._ensure(job, name, self._job_pod_sets(job), controller=True)

    def _job_pod_sets(self, job: Object) -> list[Object]:
        if job["kind"] == "Job":
            return [
                sets.pod_set("main", job["spec"].get("parallelism", 1), job["spec"]["template"])
            ]
        if job["kind"] == "JobSet":
            return sets.jobset_pod_sets(job["spec"])
        if job["kind"] in KUBEFLOW_KINDS:
            return sets.kubeflow_pod_sets(job)
        if job["kind"] == "AppWrapper":
            return sets.appwrapper_pod_sets(job)
        runtime = self._kinds.store.get(
            "clustertrainingruntimes.trainer.kubeflow.org", name=job["spec"]["runtimeRef"]["name"]
        )
        return sets.jobset_pod_sets(sets.trainjob_jobset_spec(job, runtime))

    def _ensure(
        self, owner: Object, name: str, pod_sets: list[Object], *, controller: bool = False
    ) -> Object:
        namespace = owner["metadata"]["namespace"]
        found = self._kinds.find("Workload", namespace, name)
        if found is not None:
            return found
        labels = owner["metadata"].get("labels", {})
        spec: Object = {"active": True, "queueName": labels[QUEUE_LABEL], "podSets": pod_sets}
        if PRIORITY_LABEL in labels:
            spec["priorityClassRef"] = {
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": labels[PRIORITY_LABEL],
            }
        meta: Object = {
            "name": name,
            "namespace": namespace,
            "labels": {JOB_UID_LABEL: owner["metadata"]["uid"]},
            "ownerReferences": [owner_reference(owner, controller=controller)],
        }
        if not controller:
            meta["annotations"] = {sets.IS_GROUP: "true"}
        workload = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": meta,
            "spec": spec,
        }
        return self._kinds.write(workload)

    def _pod_workloads(self) -> None:
        """Single pods and complete pod groups among the gated pods Kueue manages."""
        groups: dict[tuple[str, str], list[Object]] = {}
        for pod in self._kinds.list("Pod"):
            if not is_gated(pod) or _queue(pod) is None:
                continue
            meta = pod["metadata"]
            group = meta.get("labels", {}).get(sets.POD_GROUP_LABEL)
            if group is None:
                name = sets.workload_name("Pod", "", meta["name"], meta["uid"])
                self._ensure(pod, name, [sets.pod_set("main", 1, pod)], controller=True)
            else:
                groups.setdefault((meta["namespace"], group), []).append(pod)
        for (namespace, group), pods in groups.items():
            workload = self._kinds.find("Workload", namespace, group)
            total = int(pods[0]["metadata"].get("annotations", {}).get(sets.POD_GROUP_TOTAL, 1))
            if workload is None and len(pods) >= total:  # Kueue waits for the whole group
                workload = self._ensure(pods[0], group, sets.pod_group_pod_sets(pods))
            if workload is not None:
                self._owned_by_all(workload, pods)

    def _owned_by_all(self, workload: Object, pods: list[Object]) -> None:
        missing = [
            owner_reference(p, controller=False) for p in pods if not is_owned_by(workload, p)
        ]
        if missing:
            changed = copy.deepcopy(workload)
            changed["metadata"]["ownerReferences"] += missing
            self._kinds.write(changed)

    # Admission and eviction.

    def run_or_stop(self, state: KueueState, *, now: datetime) -> None:
        """Unsuspend or ungate what is admitted; suspend, or delete the running pods of, what
        is not (evicted, deactivated, or still pending)."""
        pods: dict[str, list[Object]] = {}  # by namespace, listed once: each pod has one Workload
        for workload in self._kinds.list("Workload"):
            meta = workload["metadata"]
            ref = WorkloadRef(meta["namespace"], meta["name"])
            if ref not in state.workloads:
                continue
            admitted = state.workload(ref).phase is Phase.ADMITTED
            job = self._controlling_job(workload)
            if job is not None:
                if is_suspended(job) == admitted:
                    self._kinds.write(with_suspend(job, not admitted))
                continue
            if ref.namespace not in pods:
                pods[ref.namespace] = self._kinds.list("Pod", namespace=ref.namespace)
            for pod in _pods_of(workload, pods[ref.namespace]):
                if admitted and is_gated(pod):
                    self._kinds.write(ungated(pod, now=now))
                elif not admitted and not is_gated(pod):
                    self._kinds.delete_tree(pod)

    def _controlling_job(self, workload: Object) -> Object | None:
        for ref in workload["metadata"].get("ownerReferences", []):
            if ref.get("controller") and ref["kind"] in SUSPEND_PATHS:
                return self._kinds.find(ref["kind"], workload["metadata"]["namespace"], ref["name"])
        return None


def _pods_of(workload: Object, pods: list[Object]) -> list[Object]:
    """The Workload's pods among its namespace's: its pod group's, else the pod owning it."""
    meta = workload["metadata"]
    if meta.get("annotations", {}).get(sets.IS_GROUP) == "true":
        return [
            p
            for p in pods
            if p["metadata"].get("labels", {}).get(sets.POD_GROUP_LABEL) == meta["name"]
        ]
    return [p for p in pods if is_owned_by(workload, p)]


def _queue(obj: Object) -> str | None:
    return (obj["metadata"].get("labels") or {}).get(QUEUE_LABEL)


def ungated(pod: Object, *, now: datetime) -> Object:
    """The pod without Kueue's gate, bound and running (the scheduler and kubelet at once)."""
    changed = copy.deepcopy(pod)
    gates = [g for g in pod["spec"]["schedulingGates"] if g["name"] != sets.ADMISSION_GATE]
    changed["spec"]["schedulingGates"] = gates
    if not gates:
        del changed["spec"]["schedulingGates"]
        changed["status"] = {"phase": "Running", "startTime": rfc3339(now)}
    return changed
