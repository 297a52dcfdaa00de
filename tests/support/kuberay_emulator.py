"""KubeRay in miniature for RayClusters no Kueue Workload admits (plain KubeRay, KAI
Scheduler, a RayJob's cluster): their pods follow `spec.suspend` the moment it changes.

    kuberay = KubeRayEmulator(server, clock=BackdatedClock().now, namespaces=["ns"])
    kuberay.sync()          # pods for every running RayCluster, as KubeRay makes them
    ...                     # a suspend deletes its pods, a resume creates them anew
    kuberay.close()

It listens to the test API server's committed writes (a listener may write to the store),
so the answer to a suspend patch comes after the pods are gone, as a quick controller would
make it look. RayClusters a Workload references are Kueue's: tests/support/cluster_emulator.py
runs their pods. Pods copy their group's template (containers, labels, annotations) under
KubeRay's own labels, never the RayCluster's labels (ray-project/kuberay ray-operator/
controllers/ray/common/pod.go DefaultHeadPodTemplate, DefaultWorkerPodTemplate, labelPod): a
RayJob's `ray.io/originated-from-*` labels stay on its RayCluster.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection
from datetime import datetime
from typing import Any

from tests.support.builders import timestamp
from tests.support.cluster_emulator import pod_slots
from tests.support.kube_server import Change, KubeServer

Object = dict[str, Any]
RAYCLUSTERS = "rayclusters.ray.io"
WORKLOADS = "workloads.kueue.x-k8s.io"


class KubeRayEmulator:
    def __init__(
        self, server: KubeServer, *, clock: Callable[[], datetime], namespaces: Collection[str]
    ) -> None:
        self._store = server.store
        self._clock = clock
        self._namespaces = frozenset(namespaces)
        self._unsubscribe = server.store.on_change(self._saw)

    def sync(self) -> None:
        """Bring every RayCluster of the namespaces in line (the first pods, after seeding)."""
        for namespace in self._namespaces:
            for raycluster in self._store.list(RAYCLUSTERS, namespace=namespace):
                self._reconcile(raycluster)

    def close(self) -> None:
        self._unsubscribe()

    def _saw(self, change: Change) -> None:
        mine = change.kind == "RayCluster" and change.namespace in self._namespaces
        if mine and change.type != "DELETED":
            self._reconcile(change.object)

    def _reconcile(self, raycluster: Object) -> None:
        meta = raycluster["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        if self._kueues(namespace, meta["uid"]):
            return
        pods = self._store.list(
            "pods", namespace=namespace, label_selector=f"ray.io/cluster={name}"
        )
        if raycluster["spec"].get("suspend", False):
            for pod in pods:
                self._store.delete("pods", name=pod["metadata"]["name"], namespace=namespace)
        elif not pods:
            for pod in kuberay_pods(raycluster, now=self._clock()):
                self._store.put(pod)

    def _kueues(self, namespace: str, uid: str) -> bool:
        """A Workload references the RayCluster: Kueue's to run."""
        return any(
            ref.get("uid") == uid
            for workload in self._store.list(WORKLOADS, namespace=namespace)
            for ref in workload["metadata"].get("ownerReferences", [])
        )


def kuberay_pods(raycluster: Object, *, now: datetime) -> list[Object]:
    """The head and worker pods KubeRay would create, from their templates, Running since
    `now`."""
    return [
        _from_template(slot.builder().build(), slot.template, now=now)
        for slot in pod_slots(raycluster)
    ]


def _from_template(pod: Object, template: Object, *, now: datetime) -> Object:
    given = template.get("metadata", {})
    pod["metadata"]["labels"] = {**given.get("labels", {}), **pod["metadata"]["labels"]}
    if given.get("annotations"):
        pod["metadata"]["annotations"] = dict(given["annotations"])
    pod["spec"] = {**pod["spec"], **copy.deepcopy(template["spec"])}
    stamp = timestamp(now)
    pod["metadata"]["creationTimestamp"] = stamp
    pod["status"] = {"phase": "Running", "startTime": stamp}
    return pod
