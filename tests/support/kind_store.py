"""The test API server's objects as the emulated controllers read and write them
(`tests.support.kind_controllers`, `tests.support.kueue_integrations`).

Every write of a CRD-backed kind is validated against its vendored CRD first (the controllers
write through the store's back door, which checks nothing). Deleting an object deletes what
it owns, as the garbage collector does with background propagation, and takes it out of the
ownerReferences of a dependent that has other owners left (kubernetes
pkg/controller/garbagecollector/garbagecollector.go, attemptToDeleteItem: "remove dangling
references"). Only objects the emulation deletes are collected: a test's own objects that
name an owner it never stored are left alone.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterator
from datetime import datetime
from typing import Any

from tests.support.crd_validation import assert_valid
from tests.support.kube_server.store import Store
from tests.support.kubeflow_kinds import KUBEFLOW_KINDS

Object = dict[str, Any]

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
WORKLOADS = "workloads.kueue.x-k8s.io"
# Every kind an emulated controller makes or Kueue's integrations read, by store key.
RESOURCES = {
    "Pod": "pods",
    "Job": "jobs.batch",
    "ReplicaSet": "replicasets.apps",
    "StatefulSet": "statefulsets.apps",
    "Deployment": "deployments.apps",
    "JobSet": "jobsets.jobset.x-k8s.io",
    **{kind: row.resource for kind, row in KUBEFLOW_KINDS.items()},
    "TrainJob": "trainjobs.trainer.kubeflow.org",
    "LeaderWorkerSet": "leaderworkersets.leaderworkerset.x-k8s.io",
    "AppWrapper": "appwrappers.workload.codeflare.dev",
    "Notebook": "notebooks.kubeflow.org",
    "Workload": WORKLOADS,
}


def owner_reference(owner: Object, *, controller: bool = True) -> Object:
    """An ownerReference to `owner`: a controller's (SetControllerReference) or a plain one
    (SetOwnerReference, no controller and no blockOwnerDeletion)."""
    meta = owner["metadata"]
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
    }
    return ref | ({"controller": True, "blockOwnerDeletion": True} if controller else {})


def controlled_child(
    owner: Object,
    *,
    api_version: str,
    kind: str,
    name: str,
    spec: Object,
    labels: dict[str, str] | None = None,
) -> Object:
    """An object a controller makes for `owner`, in its namespace, `owner` its controller."""
    meta: Object = {"name": name, "namespace": owner["metadata"]["namespace"]}
    if labels is not None:
        meta["labels"] = labels
    meta["ownerReferences"] = [owner_reference(owner)]
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}


def is_owned_by(obj: Object, owner: Object) -> bool:
    uid = owner["metadata"]["uid"]
    return any(ref["uid"] == uid for ref in obj["metadata"].get("ownerReferences", []))


def rfc3339(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


class KindStore:
    """The store seen from a set of namespaces (all of them when None)."""

    def __init__(self, store: Store, *, namespaces: Collection[str] | None) -> None:
        self.store = store
        self.namespaces = None if namespaces is None else frozenset(namespaces)
        self.writes = 0  # how many writes the emulation made (other writers do not count)

    def list(self, kind: str, **selectors: str) -> list[Object]:
        found = self.store.list(RESOURCES[kind], **selectors)
        if self.namespaces is None:
            return found
        return [obj for obj in found if obj["metadata"].get("namespace") in self.namespaces]

    def find(self, kind: str, namespace: str, name: str) -> Object | None:
        return next(
            (o for o in self.list(kind, namespace=namespace) if o["metadata"]["name"] == name),
            None,
        )

    def children(self, kind: str, owner: Object) -> list[Object]:
        """The objects of `kind` in the owner's namespace that name it among their owners."""
        namespace = owner["metadata"]["namespace"]
        return [o for o in self.list(kind, namespace=namespace) if is_owned_by(o, owner)]

    def write(self, obj: Object) -> Object:
        """Create or replace `obj` as given, validated against its CRD when it has one."""
        kind = self.store.resource(RESOURCES.get(obj["kind"], obj["kind"]))
        if kind.crd:
            assert_valid(obj)
        self.writes += 1
        return self.store.put(obj)

    def update(self, obj: Object, **spec: Any) -> Object:
        """`obj` with these spec fields set, written only when one changes."""
        if all(obj["spec"].get(key) == value for key, value in spec.items()):
            return obj
        changed = copy.deepcopy(obj)
        changed["spec"].update(spec)
        return self.write(changed)

    def delete_tree(self, obj: Object) -> None:
        """Delete `obj` and, recursively, what it alone owns; drop it from other owners' lists."""
        meta = obj["metadata"]
        if self.find(obj["kind"], meta["namespace"], meta["name"]) is None:
            return  # gone already, with an owner deleted before it
        self.store.delete(RESOURCES[obj["kind"]], name=meta["name"], namespace=meta["namespace"])
        self.writes += 1
        for dependent in self._dependents(obj):
            refs = dependent["metadata"]["ownerReferences"]
            left = [ref for ref in refs if ref["uid"] != meta["uid"]]
            if not left:
                self.delete_tree(dependent)
            else:
                kept = copy.deepcopy(dependent)
                kept["metadata"]["ownerReferences"] = left
                self.write(kept)

    def _dependents(self, owner: Object) -> Iterator[Object]:
        namespace = owner["metadata"]["namespace"]
        for key in RESOURCES.values():
            for obj in self.store.list(key, namespace=namespace):
                if is_owned_by(obj, owner):
                    yield obj
