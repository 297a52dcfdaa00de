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

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from autoscaler.domain.models import OwnerRef

KUEUE_GROUP = "kueue.x-k8s.io"
WORKLOADS = "workloads"
# The label (or, with Kueue's WorkloadIdentifierAnnotations gate, the annotation) naming a
# pod's group, which is its Workload's name (kueue pkg/controller/jobs/pod/constants/constants.go
# GroupNameLabel; pkg/util/pod/pod.go GetPodGroupName).
POD_GROUP_KEY = "kueue.x-k8s.io/pod-group-name"
# What Kueue writes on a Workload it builds for a set it does not control (StatefulSet,
# LeaderWorkerSet: several ownerReferences, none `controller`): the owner's GVK and name
# (kueue pkg/controller/constants/constants.go JobOwnerGVKAnnotation, JobOwnerNameAnnotation).
JOB_OWNER_GVK = "kueue.x-k8s.io/job-owner-gvk"
JOB_OWNER_NAME = "kueue.x-k8s.io/job-owner-name"
KUEUE_JOBS = "kubernetes-sigs/kueue pkg/controller/jobs/"


class PodsFound(StrEnum):
    """How a Workload's pods are found."""

    SELECTOR = "selector"  # the row's label selector, `{name}` the owner's name
    OWNERSHIP = "ownership"  # pods whose ownerReferences lead to the owner, through `through`
    POD_GROUP = "pod group"  # the pods Kueue's pod integration names for the Workload
    # Kueue's pod integration queues each pod of the kind as its own Workload (owned by the
    # pod): the kind is found above the pod, through `through`; its pods as POD_GROUP's.
    QUEUED_PODS = "queued pods"


@dataclass(frozen=True)
class Intermediate:
    """A kind between an owner and its pods, read only for its ownerReferences."""

    kind: str
    group: str
    plural: str
    version: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


@dataclass(frozen=True)
class OwnerKind:
    """One owner kind, as its controller and Kueue's integration for it define it."""

    kind: str
    group: str
    plural: str
    versions: tuple[str, ...]  # served, newest first: the service reads and writes the first
    pods_found: PodsFound
    pod_selector: str  # SELECTOR's label selector, `{name}` the owner's name; "" otherwise
    enabled: bool  # acted on by default (`cluster.ownerKinds.<kind>.enabled`)
    stop_means: str  # what deactivating its Workload does to it
    bring_back: str  # how it comes back
    source: str  # the upstream file its behaviour comes from (its controller, Kueue's integration)
    # The intermediate kinds (INTERMEDIATES) between it and its pods: OWNERSHIP follows them
    # down, QUEUED_PODS up from the pod.
    through: tuple[str, ...] = ()
    # False where the stop is a requeue, not a lasting stop: Kueue's pod integration deletes
    # the pods and the owner re-creates them as a new Workload that queues again.
    stop_lasts: bool = True
    # Our annotations go on it (a copy of the Workload's, where its people look). Never on
    # what Kubernetes' own controllers or Kueue own (a pod, a Job, a StatefulSet, a
    # Deployment): the Workload carries them instead, and the owner is only read.
    annotated: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.versions[0]}" if self.group else self.versions[0]


_REQUEUE = "Kueue's pod integration deletes its pods; the owner re-creates them, queued"
_REQUEUE_BACK = "nothing to do: it comes back when quota is free (its re-created pods queue again)"
_JOB_STOP = "suspended: its running pods are deleted and the job restarts when admitted again"
_JOB_BACK = "reactivate its Workload: once admitted again the job starts its pods anew"


def _kubeflow_job(kind: str, *, version: str = "v1", through: tuple[str, ...] = ()) -> OwnerKind:
    """A Kubeflow training job: its operator makes the job its pods' controller owner, and
    Kueue suspends it through `runPolicy.suspend` (kueue pkg/controller/jobs/kubeflow/
    kubeflowjob/kubeflowjob_controller.go)."""
    folder = "mpijob/mpijob_controller.go" if kind == "MPIJob" else f"kubeflow/jobs/{kind.lower()}/"
    return OwnerKind(
        kind=kind,
        group="kubeflow.org",
        plural=kind.lower() + "s",
        versions=(version,),
        pods_found=PodsFound.OWNERSHIP,
        pod_selector="",
        enabled=False,  # a stop restarts the training: opt-in
        stop_means=_JOB_STOP,
        bring_back=_JOB_BACK,
        source=KUEUE_JOBS + folder,
        through=through,
    )


OWNER_KINDS: tuple[OwnerKind, ...] = (
    # KubeRay's RayCluster, through Kueue's integration for it: an evicted Workload sets the
    # RayCluster's spec.suspend; KubeRay labels every pod of the cluster `ray.io/cluster`.
    OwnerKind(
        kind="RayCluster",
        group="ray.io",
        plural="rayclusters",
        versions=("v1",),
        pods_found=PodsFound.SELECTOR,
        pod_selector="ray.io/cluster={name}",
        enabled=True,
        stop_means="suspended: KubeRay deletes its pods; Kueue keeps it queued for later",
        bring_back="reactivate its Workload: Kueue admits it again when quota is free and "
        "KubeRay recreates its pods",
        source=KUEUE_JOBS + "raycluster/raycluster_controller.go",
    ),
    # KubeRay's RayJob: suspending it deletes its RayCluster. KubeRay makes that RayCluster
    # (named `<rayjob>-<5 random>`, `status.rayClusterName`) with the RayJob as its controller
    # owner, and the RayCluster is its pods' controller owner (ray-project/kuberay
    # ray-operator/controllers/ray/rayjob_controller.go constructRayClusterForRayJob;
    # raycluster_controller.go buildHeadPod, buildWorkerPod). Its `ray.io/originated-from-*`
    # labels go on the RayCluster only: the pods carry `ray.io/cluster=<the RayCluster's
    # name>` (common/pod.go labelPod), which is how Kueue finds them (PodLabelSelector).
    OwnerKind(
        kind="RayJob",
        group="ray.io",
        plural="rayjobs",
        versions=("v1",),
        pods_found=PodsFound.OWNERSHIP,
        pod_selector="",
        enabled=False,  # the job reruns from scratch: opt-in
        stop_means="suspended: KubeRay deletes its RayCluster and the job reruns from scratch",
        bring_back="reactivate its Workload: once admitted again the job starts from the beginning",
        source=KUEUE_JOBS + "rayjob/rayjob_controller.go",
        through=("RayCluster",),
    ),
    # The batch Job: spec.suspend deletes its running pods; the Job controller labels them
    # `batch.kubernetes.io/job-name`.
    OwnerKind(
        kind="Job",
        group="batch",
        plural="jobs",
        versions=("v1",),
        pods_found=PodsFound.SELECTOR,
        pod_selector="batch.kubernetes.io/job-name={name}",
        enabled=False,  # a batch Job finishes by itself: opt-in
        stop_means="suspended: its running pods are deleted; completed ones still count",
        bring_back="reactivate its Workload: once admitted again its remaining pods start",
        source=KUEUE_JOBS + "job/job_controller.go",
        annotated=False,  # never written: its Workload is annotated instead
    ),
    # JobSet: Kueue suspends it (spec.suspend); the JobSet controller owns one batch Job per
    # replicated job, and each Job its pods.
    OwnerKind(
        kind="JobSet",
        group="jobset.x-k8s.io",
        plural="jobsets",
        versions=("v1alpha2",),
        pods_found=PodsFound.OWNERSHIP,
        pod_selector="",
        enabled=False,
        stop_means=_JOB_STOP,
        bring_back=_JOB_BACK,
        source=KUEUE_JOBS + "jobset/jobset_controller.go",
        through=("Job",),
    ),
    _kubeflow_job("PyTorchJob"),
    _kubeflow_job("TFJob"),
    _kubeflow_job("XGBoostJob"),
    _kubeflow_job("PaddleJob"),
    _kubeflow_job("JAXJob"),
    # mpi-operator v2beta1: the launcher is a batch Job owned by the MPIJob, the workers pods.
    _kubeflow_job("MPIJob", version="v2beta1", through=("Job",)),
    # Kubeflow Trainer's TrainJob: it owns a JobSet (its runtime's template), which owns Jobs.
    OwnerKind(
        kind="TrainJob",
        group="trainer.kubeflow.org",
        plural="trainjobs",
        versions=("v1alpha1",),
        pods_found=PodsFound.OWNERSHIP,
        pod_selector="",
        enabled=False,
        stop_means=_JOB_STOP,
        bring_back=_JOB_BACK,
        source=KUEUE_JOBS + "trainjob/trainjob_controller.go",
        through=("JobSet", "Job"),
    ),
    # AppWrapper (CodeFlare): its controller owns the wrapped objects and labels their pod
    # templates `workload.codeflare.dev/appwrapper` (project-codeflare/appwrapper
    # internal/controller/appwrapper/resource_management.go, api/v1beta2/appwrapper_types.go
    # AppWrapperLabel), whatever kinds it wraps.
    OwnerKind(
        kind="AppWrapper",
        group="workload.codeflare.dev",
        plural="appwrappers",
        versions=("v1beta2",),
        pods_found=PodsFound.SELECTOR,
        pod_selector="workload.codeflare.dev/appwrapper={name}",
        enabled=False,
        stop_means="suspended: its wrapped resources are deleted and it restarts when admitted",
        bring_back="reactivate its Workload: once admitted again the AppWrapper re-creates them",
        source=KUEUE_JOBS + "appwrapper/appwrapper_controller.go",
    ),
    # LeaderWorkerSet: one Workload per group, owned (not controlled) by the set and annotated
    # job-owner-gvk/-name; Kueue names the group's pods with the Workload's name.
    OwnerKind(
        kind="LeaderWorkerSet",
        group="leaderworkerset.x-k8s.io",
        plural="leaderworkersets",
        versions=("v1",),
        pods_found=PodsFound.POD_GROUP,
        pod_selector="",
        enabled=False,
        stop_means="its group's pods are deleted and gated: the Workload stays, inactive",
        bring_back="reactivate its Workload: once admitted again the group's pods start",
        source=KUEUE_JOBS + "leaderworkerset/leaderworkerset_reconciler.go",
    ),
    # StatefulSet (Kueue v0.20): one Workload owned (not controlled) by the set, its pods a
    # pod group named after the Workload.
    OwnerKind(
        kind="StatefulSet",
        group="apps",
        plural="statefulsets",
        versions=("v1",),
        pods_found=PodsFound.POD_GROUP,
        pod_selector="",
        enabled=False,
        stop_means="its pods are deleted and gated: the Workload stays, inactive",
        bring_back="reactivate its Workload: once admitted again its pods start",
        source=KUEUE_JOBS + "statefulset/statefulset_reconciler.go",
        annotated=False,  # never written: its Workload is annotated instead
    ),
    # Deployment: Kueue has no Workload for it (a no-op reconciler); its pods are queued one by
    # one by the pod integration, each its own Workload owned by the pod; the Deployment is
    # found above the pod, through its ReplicaSet.
    OwnerKind(
        kind="Deployment",
        group="apps",
        plural="deployments",
        versions=("v1",),
        pods_found=PodsFound.QUEUED_PODS,
        pod_selector="",
        enabled=False,
        stop_means=_REQUEUE,
        bring_back=_REQUEUE_BACK,
        source=KUEUE_JOBS + "deployment/deployment_controller.go",
        through=("ReplicaSet",),
        stop_lasts=False,
        annotated=False,  # never written: its queued pods' Workloads are annotated
    ),
    # Kubeflow Notebook: its controller owns a StatefulSet, which owns the notebook's pod;
    # OpenShift AI queues that pod through Kueue's pod integration (the queue-name label on
    # the pod template), so the Workload is owned by the pod and the Notebook is found above.
    OwnerKind(
        kind="Notebook",
        group="kubeflow.org",
        plural="notebooks",
        versions=("v1",),
        pods_found=PodsFound.QUEUED_PODS,
        pod_selector="",
        enabled=False,
        stop_means="the notebook's pod is deleted; it starts again, queued",
        bring_back="nothing to do: it starts again, queued, when quota is free",
        source=KUEUE_JOBS + "pod/pod_controller.go",
        through=("StatefulSet",),
        stop_lasts=False,
    ),
    # A plain pod, or a pod group (several pods, one Workload named by their group label,
    # owned by each pod, none `controller`): never written, the Workload is annotated instead.
    OwnerKind(
        kind="Pod",
        group="",
        plural="pods",
        versions=("v1",),
        pods_found=PodsFound.POD_GROUP,
        pod_selector="",
        enabled=False,
        stop_means=_REQUEUE,
        bring_back=_REQUEUE_BACK,
        source=KUEUE_JOBS + "pod/pod_controller.go",
        stop_lasts=False,
        annotated=False,
    ),
)
KNOWN_OWNERS: dict[str, OwnerKind] = {row.kind: row for row in OWNER_KINDS}


def _read_through(kind: str) -> Intermediate:
    """An owner kind's row read as an intermediate: its group, plural and served version."""
    row = KNOWN_OWNERS[kind]
    return Intermediate(row.kind, row.group, row.plural, row.versions[0])


INTERMEDIATES: dict[str, Intermediate] = {
    row.kind: row
    for row in (
        _read_through("Job"),
        _read_through("JobSet"),
        _read_through("RayCluster"),
        # no row: Kueue has no integration for it, read only between a Deployment and its pods
        Intermediate("ReplicaSet", "apps", "replicasets", "v1"),
        _read_through("StatefulSet"),
    )
}
QUEUED_ABOVE_PODS: tuple[OwnerKind, ...] = tuple(
    row for row in OWNER_KINDS if row.pods_found is PodsFound.QUEUED_PODS
)


def known_owner(
    owner: OwnerRef | None, *, kinds: Mapping[str, OwnerKind] = KNOWN_OWNERS
) -> OwnerKind | None:
    """The owner's kind when we know it and its API group matches (a namesake kind of
    another group is not ours to write). `kinds`: the owner kinds' table (tests pass rows of
    their own)."""
    if owner is None:
        return None
    kind = kinds.get(owner.kind)
    group = owner.api_version.rpartition("/")[0]
    return kind if kind is not None and kind.group == group else None
