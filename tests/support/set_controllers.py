"""The controllers of the kinds that keep pods alive, in miniature: a pod deleted (by Kueue's
eviction) is made again, and Kueue's webhooks gate the new one.

- Deployment (kubernetes pkg/controller/deployment/sync.go): one ReplicaSet
  `<deployment>-<pod-template-hash>`; Kueue's Deployment webhook marks its pod template
  (kueue pkg/controller/jobs/deployment/deployment_webhook.go, Default), so every pod is a
  Workload of its own.
- ReplicaSet (kubernetes pkg/controller/replicaset/replica_set.go): `replicas` pods
  `<replicaset>-<suffix>`, a deleted one replaced under a new name.
- StatefulSet (kubernetes pkg/controller/statefulset/stateful_set_control.go): pods
  `<set>-<ordinal>` from `spec.ordinals.start`, a deleted one made again under its name. A
  queued set's pods join its prebuilt Workload (kueue pkg/controller/jobs/statefulset/
  statefulset_pod_reconciler.go, setDefault).
- LeaderWorkerSet (kubernetes-sigs/lws pkg/controllers/leaderworkerset_controller.go and
  pod_controller.go): a leader StatefulSet `<lws>` of `replicas` leaders, and for each leader
  pod a worker StatefulSet `<lws>-<group>` (ordinals from 1) controlled by that pod. Kueue puts
  every pod of group g in the Workload of group g (kueue pkg/controller/jobs/leaderworkerset/
  leaderworkerset_reconciler.go, setDefault).
- Notebook (kubeflow/notebooks components/notebook-controller/controllers/
  notebook_controller.go, generateStatefulSet): a StatefulSet of one pod, the Notebook's labels
  copied onto the pod template, so a queue label makes its pod a plain pod Kueue gates.
"""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import datetime

from autoscaler.sim.kinds import stable_suffix
from tests.support import kueue_pod_sets as sets
from tests.support.kind_pods import child_pod, in_group, suspended_by_parent
from tests.support.kind_store import (
    QUEUE_LABEL,
    KindStore,
    Object,
    controlled_child,
)

LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER = "leaderworkerset.sigs.k8s.io/worker-index"
LWS_SIZE = "leaderworkerset.sigs.k8s.io/size"
LWS_LEADER_NAME = "leaderworkerset.sigs.k8s.io/leader-name"


class SetControllers:
    def __init__(self, kinds: KindStore) -> None:
        self._kinds = kinds

    def reconcile(self, *, now: datetime) -> None:
        for notebook in self._kinds.list("Notebook"):
            self._notebook(notebook)
        for deployment in self._kinds.list("Deployment"):
            self._deployment(deployment)
        for lws in self._kinds.list("LeaderWorkerSet"):
            self._leaderworkerset(lws)
        for replicaset in self._kinds.list("ReplicaSet"):
            self._replicaset(replicaset, now=now)
        for statefulset in self._kinds.list("StatefulSet"):
            self._statefulset(statefulset, now=now)

    def _ensure(
        self, kind: str, owner: Object, name: str, spec: Object, labels: dict[str, str]
    ) -> None:
        if self._kinds.find(kind, owner["metadata"]["namespace"], name) is None:
            self._kinds.write(
                controlled_child(
                    owner, api_version="apps/v1", kind=kind, name=name, spec=spec, labels=labels
                )
            )

    def _notebook(self, notebook: Object) -> None:
        name = notebook["metadata"]["name"]
        own = {"statefulset": name, "notebook-name": name}
        labels = {**own, **notebook["metadata"].get("labels", {})}
        spec = {
            "replicas": 1,
            "serviceName": name,
            "selector": {"matchLabels": {"statefulset": name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": notebook["spec"]["template"]["spec"],
            },
        }
        self._ensure("StatefulSet", notebook, name, spec, {})

    def _deployment(self, deployment: Object) -> None:
        template = deployment["spec"]["template"]
        queue = deployment["metadata"].get("labels", {}).get(QUEUE_LABEL)
        if queue is not None:
            template = suspended_by_parent(template, "deployment", queue)
        digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
        hash_label = stable_suffix(digest, length=10)
        template = copy.deepcopy(template)
        template["metadata"].setdefault("labels", {})["pod-template-hash"] = hash_label
        spec = {
            "replicas": deployment["spec"].get("replicas", 1),
            "selector": deployment["spec"]["selector"],
            "template": template,
        }
        name = f"{deployment['metadata']['name']}-{hash_label}"
        self._ensure("ReplicaSet", deployment, name, spec, {"pod-template-hash": hash_label})

    def _replicaset(self, replicaset: Object, *, now: datetime) -> None:
        pods = self._kinds.children("Pod", replicaset)
        name, uid = replicaset["metadata"]["name"], replicaset["metadata"]["uid"]
        for index in range(len(pods), replicaset["spec"].get("replicas", 1)):
            pod_name = f"{name}-{stable_suffix(f'{uid}/{index}/{now}')}"
            self._kinds.write(
                child_pod(replicaset, pod_name, replicaset["spec"]["template"], now=now)
            )

    def _leaderworkerset(self, lws: Object) -> None:
        name = lws["metadata"]["name"]
        template = lws["spec"]["leaderWorkerTemplate"]
        size = template.get("size", 1)
        labels = {LWS_NAME: name}
        leader = template.get("leaderTemplate", template["workerTemplate"])
        spec = {
            "replicas": lws["spec"].get("replicas", 1),
            "serviceName": name,
            "selector": {"matchLabels": labels},
            "template": _lws_template(lws, leader, labels),
        }
        self._ensure("StatefulSet", lws, name, spec, labels)
        for leader_pod in self._kinds.list("Pod", label_selector=f"{LWS_NAME}={name}"):
            group = leader_pod["metadata"]["labels"].get(LWS_GROUP)
            if LWS_WORKER in leader_pod["metadata"]["labels"] or size < 2:
                continue
            group_labels = {LWS_NAME: name, LWS_GROUP: group}
            worker_spec = {
                "replicas": size - 1,
                "ordinals": {"start": 1},
                "serviceName": name,
                "selector": {"matchLabels": group_labels},
                "template": _lws_template(lws, template["workerTemplate"], group_labels),
            }
            self._ensure("StatefulSet", leader_pod, f"{name}-{group}", worker_spec, group_labels)

    def _statefulset(self, statefulset: Object, *, now: datetime) -> None:
        meta, spec = statefulset["metadata"], statefulset["spec"]
        have = {p["metadata"]["name"] for p in self._kinds.children("Pod", statefulset)}
        start = spec.get("ordinals", {}).get("start", 0)
        template = spec["template"]
        queue = meta.get("labels", {}).get(QUEUE_LABEL)
        if queue is not None and not meta.get("ownerReferences"):
            template = suspended_by_parent(template, "statefulset", queue)
        for ordinal in range(start, start + spec.get("replicas", 1)):
            name = f"{meta['name']}-{ordinal}"
            if name in have:
                continue
            labels = {
                "statefulset.kubernetes.io/pod-name": name,
                "apps.kubernetes.io/pod-index": str(ordinal),
            }
            pod = child_pod(statefulset, name, template, now=now, labels=labels)
            self._kinds.write(self._kueue_group(statefulset, pod, ordinal))

    def _kueue_group(self, statefulset: Object, pod: Object, ordinal: int) -> Object:
        """The LWS labels of a leader or worker pod, and the pod named in its prebuilt
        Workload when Kueue queues the set (or its LWS)."""
        labels = pod["metadata"]["labels"]
        parent = pod["metadata"]["annotations"].get(sets.SUSPENDING_PARENT)
        if parent == "statefulset":
            workload = sets.owner_workload_name(statefulset)
            return in_group(pod, workload, total=statefulset["spec"].get("replicas", 1))
        lws = self._kinds.find(
            "LeaderWorkerSet", pod["metadata"]["namespace"], labels.get(LWS_NAME, "")
        )
        if lws is None:
            return pod
        size = lws["spec"]["leaderWorkerTemplate"].get("size", 1)
        if LWS_GROUP not in labels:  # a leader: its ordinal is its group
            labels[LWS_GROUP] = str(ordinal)
            pod["metadata"]["annotations"][LWS_SIZE] = str(size)
            role = "leader"
        else:
            labels[LWS_WORKER] = str(ordinal)
            leader = f"{labels[LWS_NAME]}-{labels[LWS_GROUP]}"
            pod["metadata"]["annotations"][LWS_LEADER_NAME] = leader
            role = "worker"
        if parent != "leaderworkerset":
            return pod
        if "leaderTemplate" not in lws["spec"]["leaderWorkerTemplate"]:
            role = "main"
        workload = sets.owner_workload_name(lws, suffix=labels[LWS_GROUP])
        return in_group(pod, workload, total=size, role=role)


def _lws_template(lws: Object, template: Object, labels: dict[str, str]) -> Object:
    """The pod template with the LWS labels, marked by Kueue's LWS webhook when queued."""
    queue = lws["metadata"].get("labels", {}).get(QUEUE_LABEL)
    changed = copy.deepcopy(template)
    changed.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
    if queue is None:
        return changed
    return suspended_by_parent(changed, "leaderworkerset", queue)
