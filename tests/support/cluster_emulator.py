"""Kueue and KubeRay in miniature, over the test API server's objects.

`sync()` does what the two controllers would do between two of our cycles: rebuild the
admission state from the stored objects (the pure model in `autoscaler.sim`), run one Kueue
scheduling pass (`autoscaler.sim.admission.admit_pending`: admit what fits; for a head that
only fits by preemption, evict and requeue its victims, and admit it in a later `sync()`
once their quota is free), write each Workload's status (preemption conditions included,
see `kueue_status`), and create the pods of admitted RayClusters (Running)
or delete them and suspend the RayCluster when its Workload is not admitted. A RayJob's
Workload runs it as KubeRay's RayJob controller does (ray-project/kuberay ray-operator/
controllers/ray/rayjob_controller.go): unsuspended, it gets a RayCluster of its
`rayClusterSpec`, controlled by the job and labelled `ray.io/originated-from-crd` and
`ray.io/originated-from-cr-name` (constructRayClusterForRayJob, SetControllerReference), whose
pods the RayCluster controls (raycluster_controller.go buildHeadPod, buildWorkerPod) and
labels as any RayCluster's: `ray.io/cluster`, node type and group, and the group template's
labels, never the RayCluster's own (common/pod.go labelPod, DefaultHeadPodTemplate,
DefaultWorkerPodTemplate); suspended, the RayCluster is deleted with its pods. Kueue suspends
and unsuspends the RayJob (kueue pkg/controller/jobs/rayjob/rayjob_controller.go). The tests
call it explicitly, so the order of events is deterministic. Given `namespaces`, it sees only the
Workloads (and RayClusters) there, so tests sharing the session's server leave each other be.

The other kinds Kueue queues (JobSet, the Kubeflow training jobs PyTorchJob, TFJob, XGBoostJob,
PaddleJob, JAXJob and MPIJob, TrainJob, LeaderWorkerSet, AppWrapper, Notebook, Deployment,
StatefulSet, plain pods) live through `kind_controllers.KindEmulator`:
before the admission step their Workloads are made (and their gated pods), after it Kueue
runs or stops each and the kinds' controllers follow. One `sync()` is one round of all of it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from autoscaler.domain.models import WorkloadRef
from autoscaler.sim.admission import admit_pending
from autoscaler.sim.kueue_model import KueueFeatures, KueueState, Phase
from tests.support.builders import make_pod
from tests.support.builders.pods import PodBuilder
from tests.support.builders.ray import RayJobBuilder
from tests.support.kind_controllers import KindEmulator
from tests.support.kube_server import KubeServer
from tests.support.kueue_objects import (
    cluster_queue_from_object,
    cluster_queue_status,
    local_queue_from_object,
    priority_class_from_object,
    workload_from_object,
    workload_status,
)

Object = dict[str, Any]
WORKLOADS = "workloads.kueue.x-k8s.io"
RAYCLUSTERS = "rayclusters.ray.io"
RAYJOBS = "rayjobs.ray.io"


class ClusterEmulator:
    def __init__(
        self,
        server: KubeServer,
        *,
        clock: Callable[[], datetime],
        namespaces: Collection[str] | None = None,
        features: KueueFeatures | None = None,
    ) -> None:
        """`features`: the emulated Kueue's feature gates and fair sharing, Kueue's defaults
        unless given (PriorityBoost off, fair sharing off)."""
        self._store = server.store
        self._features = features or KueueFeatures()
        self._clock = clock
        self._namespaces = None if namespaces is None else frozenset(namespaces)
        # The kubelet's view of the registry: a pod whose image is listed here never starts,
        # it waits in ImagePullBackOff (kubernetes pkg/kubelet/images/image_manager.go); take
        # the image out (published at last) and the kubelet's next retry starts it.
        self.unpullable: set[str] = set()
        # RayClusters whose Workloads Kueue's job reconciler gives a PodsReady condition, as
        # with waitForPodsReady on (kueue pkg/controller/jobframework/reconciler.go,
        # generatePodsReadyCondition): False/WaitForStart until every pod runs, then
        # True/Started. The service reads it per Workload, so a test may set it for one.
        self.pods_ready_for: set[str] = set()
        self._kinds = KindEmulator(server.store, namespaces=namespaces)

    def sync(self) -> KueueState:
        now = self._clock()
        self._kinds.before_admission(now=now)
        state, _events = admit_pending(self._read_state(now), now)
        for obj in self._workloads():
            ref = WorkloadRef(obj["metadata"]["namespace"], obj["metadata"]["name"])
            if ref not in state.workloads:
                continue
            admitted = state.workload(ref).phase is Phase.ADMITTED
            owner = _controller_owner(obj, "RayCluster")
            status = workload_status(state, ref)
            if owner is not None:
                self._reconcile_raycluster(ref.namespace, owner, admitted=admitted, now=now)
            if (job := _controller_owner(obj, "RayJob")) is not None:
                self._reconcile_rayjob(ref.namespace, job, admitted=admitted, now=now)
            if owner in self.pods_ready_for and admitted:
                status = self._with_pods_ready(status, ref.namespace, owner)
            self._write_status(obj, status)
        self._write_queue_statuses(state)
        self._kinds.after_admission(state, now=now)
        return state

    def _write_queue_statuses(self, state: KueueState) -> None:
        """Each ClusterQueue this emulator's namespaces queue to gets Kueue's usage counters
        (status.flavorsUsage), as Kueue writes them; other tests' queues are left alone."""
        mine = {
            queue.cluster_queue
            for (namespace, _), queue in state.local_queues.items()
            if self._namespaces is None or namespace in self._namespaces
        }
        for obj in self._store.list("clusterqueues.kueue.x-k8s.io"):
            if obj["metadata"]["name"] in mine:
                self._write_status(obj, cluster_queue_status(state, obj["metadata"]["name"]))

    def _read_state(self, now: datetime) -> KueueState:
        state = KueueState(features=self._features)
        flavors = {
            obj["metadata"]["name"]: obj
            for obj in self._store.list("resourceflavors.kueue.x-k8s.io")
        }
        for obj in self._store.list("clusterqueues.kueue.x-k8s.io"):
            state = state.with_cluster_queue(cluster_queue_from_object(obj, flavors=flavors))
        for obj in self._store.list("localqueues.kueue.x-k8s.io"):
            state = state.with_local_queue(local_queue_from_object(obj))
        for obj in self._store.list("workloadpriorityclasses.kueue.x-k8s.io"):
            state = state.with_priority_class(*priority_class_from_object(obj))
        classes = state.priority_classes
        return state.with_workloads(
            workload_from_object(obj, priority_classes=classes, now=now)
            for obj in self._workloads()
        )

    def _workloads(self) -> list[Object]:
        found = self._store.list(WORKLOADS)
        if self._namespaces is None:
            return found
        return [obj for obj in found if obj["metadata"]["namespace"] in self._namespaces]

    def _write_status(self, obj: Object, status: Object) -> None:
        if obj.get("status") == status:
            return
        updated = copy.deepcopy(obj)
        updated["status"] = status
        self._store.put(updated)

    def _reconcile_raycluster(
        self, namespace: str, name: str, *, admitted: bool, now: datetime
    ) -> None:
        raycluster = self._store.get(RAYCLUSTERS, name=name, namespace=namespace)
        pods = self._store.list(
            "pods", namespace=namespace, label_selector=f"ray.io/cluster={name}"
        )
        suspended = not admitted
        if raycluster["spec"].get("suspend", False) != suspended:
            self._store.patch(
                RAYCLUSTERS, name=name, namespace=namespace, patch={"spec": {"suspend": suspended}}
            )
        if suspended:
            for pod in pods:
                self._store.delete("pods", name=pod["metadata"]["name"], namespace=namespace)
        elif not pods:
            for pod in ray_pods(raycluster, now=now):
                self._store.put(self._pulled(pod, now=now))
        else:
            for pod in pods:
                if _waiting_for_image(pod) and not self._unpullable_in(pod):
                    started = copy.deepcopy(pod)
                    started["status"] = {"phase": "Running", "startTime": rfc3339_of(now)}
                    self._store.put(started)

    def _reconcile_rayjob(
        self, namespace: str, name: str, *, admitted: bool, now: datetime
    ) -> None:
        rayjob = self._store.get(RAYJOBS, name=name, namespace=namespace)
        if rayjob["spec"].get("suspend") is admitted or "suspend" not in rayjob["spec"]:
            rayjob = self._store.patch(
                RAYJOBS, name=name, namespace=namespace, patch={"spec": {"suspend": not admitted}}
            )
        cluster = RayJobBuilder(copy.deepcopy(rayjob)).raycluster().build()
        cluster_name = cluster["metadata"]["name"]
        found = self._store.list(RAYCLUSTERS, namespace=namespace)
        exists = any(c["metadata"]["name"] == cluster_name for c in found)
        pods = self._store.list(
            "pods", namespace=namespace, label_selector=f"ray.io/cluster={cluster_name}"
        )
        if not admitted:
            for pod in pods:
                self._store.delete("pods", name=pod["metadata"]["name"], namespace=namespace)
            if exists:
                self._store.delete(RAYCLUSTERS, name=cluster_name, namespace=namespace)
            return
        if not exists:
            cluster = self._store.put(cluster)
        if not pods:
            for pod in ray_pods(cluster, now=now):
                self._store.put(self._pulled(pod, now=now))

    def _unpullable_in(self, pod: Object) -> bool:
        return any(c["image"] in self.unpullable for c in pod["spec"]["containers"])

    def _pulled(self, pod: Object, *, now: datetime) -> Object:
        """The pod Running, or waiting in ImagePullBackOff when its image cannot be pulled."""
        if not self._unpullable_in(pod):
            return pod
        waiting = PodBuilder(pod).image_pull_failing(since=now).build()
        waiting["metadata"]["creationTimestamp"] = pod["metadata"]["creationTimestamp"]
        return waiting

    def _with_pods_ready(self, status: Object, namespace: str, name: str) -> Object:
        """Kueue's PodsReady: True once every pod runs, else False/WaitForStart since the
        admission (the job reconciler writes it when the Workload is admitted)."""
        pods = self._store.list(
            "pods", namespace=namespace, label_selector=f"ray.io/cluster={name}"
        )
        ready = bool(pods) and all(not _waiting_for_image(p) for p in pods)
        admitted = next(c for c in status["conditions"] if c["type"] == "Admitted")
        condition = {
            "type": "PodsReady",
            "status": "True" if ready else "False",
            "reason": "Started" if ready else "WaitForStart",
            "message": "All pods reached readiness and the workload is running"
            if ready
            else "Not all pods are ready or succeeded",
            "lastTransitionTime": admitted["lastTransitionTime"],
        }
        return {**status, "conditions": [*status["conditions"], condition]}


def ray_pods(raycluster: Object, *, now: datetime) -> list[Object]:
    """The head and worker pods KubeRay would create, Running since `now`."""
    pods = []
    for slot in pod_slots(raycluster):
        pod = slot.builder().build()
        pod["spec"]["containers"] = copy.deepcopy(slot.template["spec"]["containers"])
        pods.append(_running(pod, now))
    return pods


@dataclass(frozen=True)
class PodSlot:
    """One pod KubeRay makes for a RayCluster: its group and the template it is made from."""

    raycluster: Object
    node_type: str  # "head" or "worker"
    group: str
    index: int
    template: Object

    def builder(self) -> PodBuilder:
        meta = self.raycluster["metadata"]
        suffix = "head" if self.node_type == "head" else f"{self.group}-worker-{self.index}"
        return make_pod(meta["namespace"], f"{meta['name']}-{suffix}").owned_by_raycluster(
            self.raycluster, node_type=self.node_type, group=self.group
        )


def pod_slots(raycluster: Object) -> list[PodSlot]:
    """Every pod of the head group and of each worker group's replicas, in order."""
    spec = raycluster["spec"]
    groups = [("head", "headgroup", 1, spec["headGroupSpec"]["template"])]
    groups += [
        ("worker", g["groupName"], g.get("replicas", 1), g["template"])
        for g in spec.get("workerGroupSpecs", [])
    ]
    return [
        PodSlot(raycluster, node_type, group, index, template)
        for node_type, group, replicas, template in groups
        for index in range(replicas)
    ]


def rfc3339_of(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def _running(pod: Object, now: datetime) -> Object:
    stamp = rfc3339_of(now)
    pod["metadata"]["creationTimestamp"] = stamp
    pod["status"] = {"phase": "Running", "startTime": stamp}
    return pod


def _waiting_for_image(pod: Object) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return any("waiting" in (c.get("state") or {}) for c in statuses)


def _controller_owner(workload: Object, kind: str) -> str | None:
    for ref in workload["metadata"].get("ownerReferences", []):
        if ref.get("kind") == kind and ref.get("controller"):
            return str(ref["name"])
    return None
