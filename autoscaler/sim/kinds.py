"""The owner kinds the demo's cluster knows besides RayCluster: how each kind's controller
names and labels its pods, which API version people know it by, and what a stop does to it.

A `RayClusterSpec` of another `kind` reads its head as the kind's first pod (the notebook's
pod, the PyTorchJob's master, the LeaderWorkerSet group's leader, the Deployment's one
replica) and its worker groups as the rest. Kueue's pod integration (Notebook, Deployment)
makes a Workload per pod: a stop deletes the pod, its controller makes it again and the new
pod's Workload queues behind the waiters (kueue pkg/controller/jobs/pod/pod_controller.go,
Stop; site/content/en/docs/tasks/run/deployment.md). The job kinds and the
LeaderWorkerSet keep their Workload: the stop lasts (kueue pkg/controller/jobframework/
reconciler.go; pkg/controller/jobs/leaderworkerset/leaderworkerset_reconciler.go).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from autoscaler.domain.policy.owners import KNOWN_OWNERS, OwnerKind

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # what Kubernetes' generateName draws from


@dataclass(frozen=True)
class SimKind:
    """What the simulator needs of a kind beyond its row in the owner kinds' table
    (`domain/policy/owners.py`), the one home of its API version and whether a stop lasts."""

    kind: str
    head_set: str  # the first pod set's name in the kind's Workload
    # The demo's words name a Ray kind by its name alone (its table's RAYCLUSTER column);
    # any other kind as people know it, "Notebook ml/alice".
    named_alone: bool = False

    @property
    def row(self) -> OwnerKind:
        return KNOWN_OWNERS[self.kind]

    @property
    def api_version(self) -> str:
        return self.row.api_version

    @property
    def requeues(self) -> bool:
        """Kueue's pod integration: a stop is a requeue, a new Workload."""
        return not self.row.stop_lasts

    def known_as(self, namespace: str, owner: str) -> str:
        """The owner in the demo's words: "alice-rc" for a RayCluster, "Notebook ml/alice"
        for the other kinds (`owner_words.owner_name`)."""
        return owner if self.named_alone else f"{self.kind} {namespace}/{owner}"

    def pod_name(self, owner: str, *, group: str, index: int, suffix: str) -> str:
        """The pod's name as the kind's controller makes it; `index` counts within `group`."""
        if self.kind == "Notebook":  # its StatefulSet's only pod
            return f"{owner}-0"
        if self.kind == "PyTorchJob":  # kubeflow/training-operator: <job>-<type>-<index>
            return f"{owner}-master-0" if group == "head" else f"{owner}-worker-{index}"
        if self.kind == "LeaderWorkerSet":  # kubernetes-sigs/lws: leader <lws>-0, workers -0-i
            return f"{owner}-0" if group == "head" else f"{owner}-0-{index + 1}"
        if self.kind == "Deployment":  # its ReplicaSet's pods: <rs>-<suffix>
            return f"{owner}-{stable_suffix(owner, 10)}-{suffix}"
        prefix = f"{owner}-head" if group == "head" else f"{owner}-{group}-worker"
        return f"{prefix}-{suffix}"  # KubeRay

    def pod_labels(self, owner: str, *, group: str) -> dict[str, str]:
        if self.kind == "Notebook":
            return {"notebook-name": owner, "statefulset": owner}
        if self.kind == "PyTorchJob":
            role = "master" if group == "head" else "worker"
            return {
                "training.kubeflow.org/job-name": owner,
                "training.kubeflow.org/replica-type": role,
            }
        if self.kind == "LeaderWorkerSet":
            return {"leaderworkerset.sigs.k8s.io/name": owner}
        if self.kind == "Deployment":
            return {"app": owner}
        # KubeRay's pod labels (common/pod.go labelPod). A RayJob's pods are its RayCluster's,
        # `ray.io/cluster=<cluster>`, never the job's name; the simulator names that cluster
        # after the job (KubeRay adds 5 random characters: GenerateRayClusterName).
        node_type = "head" if group == "head" else "worker"
        labels = {"ray.io/cluster": owner, "ray.io/node-type": node_type}
        return labels | ({} if group == "head" else {"ray.io/group": group})

    def workload_name(self, namespace: str, owner: str, *, generation: int = 0) -> str:
        """Kueue's `<kind>-<name>-<5 hex>`; for the pod integration the pod's, a new one
        each time the pod is made again (its uid changes)."""
        if self.requeues:
            pod = self.pod_name(owner, group="head", index=0, suffix=stable_suffix(owner))
            return f"pod-{pod}-{stable_suffix(f'{namespace}/{pod}/{generation}')}"
        digest = hashlib.sha256(f"{namespace}/{self.kind}/{owner}".encode()).hexdigest()
        return f"{self.kind.lower()}-{owner}-{digest[:5]}"


SIM_KINDS: dict[str, SimKind] = {
    row.kind: row
    for row in (
        SimKind("RayCluster", "head", named_alone=True),
        SimKind("RayJob", "head", named_alone=True),
        SimKind("Notebook", "main"),
        SimKind("PyTorchJob", "master"),
        SimKind("LeaderWorkerSet", "leader"),
        SimKind("Deployment", "main"),
    )
}


def stable_suffix(text: str, length: int = 5) -> str:
    """A stable stand-in for a random name suffix (generateName's, a ReplicaSet's hash):
    `length` letters of Kubernetes' alphabet (k8s.io/apimachinery pkg/util/rand), from `text`."""
    number = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    letters = []
    for _ in range(length):
        number, index = divmod(number, len(_SUFFIX_ALPHABET))
        letters.append(_SUFFIX_ALPHABET[index])
    return "".join(letters)
