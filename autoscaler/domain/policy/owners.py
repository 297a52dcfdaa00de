"""The owner kinds: one row per kind of object a Kueue Workload may belong to.

This table is the one place a kind is added. Everything else reads it: the domain (which
owner a person's change lands on, `known_owner`), the Kueue adapter (where the owner lives
in the API and the calls allowed on it, `adapters/kueue/resources.py`,
`adapters/kubernetes/resources.py`), the settings (`cluster.ownerKinds` defaults: which
kinds are acted on, how their pods are found; a configured entry overrides its row) and the
chart (its RBAC and rendered defaults, from `charts/idle-gpu-autoscaler/files/owner-kinds.yaml`,
generated from this table).
"""

from __future__ import annotations

from dataclasses import dataclass

from autoscaler.domain.models import OwnerRef

KUEUE_GROUP = "kueue.x-k8s.io"
WORKLOADS = "workloads"


@dataclass(frozen=True)
class OwnerKind:
    """One owner kind, as its controller and Kueue's integration for it define it."""

    kind: str
    group: str
    plural: str
    versions: tuple[str, ...]  # served, newest first: the service reads and writes the first
    pod_selector: str  # how its pods are found: a label selector, `{name}` the owner's name
    enabled: bool  # acted on by default (`cluster.ownerKinds.<kind>.enabled`)
    stop_means: str  # what deactivating its Workload does to it
    bring_back: str  # how it comes back
    # False where the stop is a requeue, not a lasting stop: Kueue's pod integration deletes
    # the pods and the owner re-creates them as a new Workload that queues again.
    stop_lasts: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.versions[0]}"


OWNER_KINDS: tuple[OwnerKind, ...] = (
    # KubeRay's RayCluster, through Kueue's integration for it (kueue
    # pkg/controller/jobs/raycluster/raycluster_controller.go): an evicted Workload sets the
    # RayCluster's spec.suspend; KubeRay labels every pod of the cluster `ray.io/cluster`.
    OwnerKind(
        kind="RayCluster",
        group="ray.io",
        plural="rayclusters",
        versions=("v1",),
        pod_selector="ray.io/cluster={name}",
        enabled=True,
        stop_means="suspended: KubeRay deletes its pods; Kueue keeps it queued for later",
        bring_back="reactivate its Workload: Kueue admits it again when quota is free and "
        "KubeRay recreates its pods",
    ),
    # KubeRay's RayJob (kueue pkg/controller/jobs/rayjob/rayjob_controller.go): suspending it
    # deletes its RayCluster, whose pods carry `ray.io/originated-from-cr-name`.
    OwnerKind(
        kind="RayJob",
        group="ray.io",
        plural="rayjobs",
        versions=("v1",),
        pod_selector="ray.io/originated-from-cr-name={name}",
        enabled=False,  # the job reruns from scratch: opt-in
        stop_means="suspended: KubeRay deletes its RayCluster and the job reruns from scratch",
        bring_back="reactivate its Workload: once admitted again the job starts from the beginning",
    ),
    # The batch Job (kueue pkg/controller/jobs/job/job_controller.go): spec.suspend deletes
    # its running pods; the Job controller labels them `batch.kubernetes.io/job-name`.
    OwnerKind(
        kind="Job",
        group="batch",
        plural="jobs",
        versions=("v1",),
        pod_selector="batch.kubernetes.io/job-name={name}",
        enabled=False,  # a batch Job finishes by itself: opt-in
        stop_means="suspended: its running pods are deleted; completed ones still count",
        bring_back="reactivate its Workload: once admitted again its remaining pods start",
    ),
)
KNOWN_OWNERS: dict[str, OwnerKind] = {row.kind: row for row in OWNER_KINDS}


def known_owner(owner: OwnerRef | None) -> OwnerKind | None:
    """The owner's kind when we know it and its API group matches (a namesake kind of
    another group is not ours to write)."""
    if owner is None:
        return None
    kind = KNOWN_OWNERS.get(owner.kind)
    group = owner.api_version.rpartition("/")[0]
    return kind if kind is not None and kind.group == group else None
