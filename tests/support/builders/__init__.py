"""Fluent builders for test objects (RayCluster, Workload, Pod, Kueue queues, KAI queues).

    rc = make_raycluster("ns", "rc").head(gpus=1).gpu_worker(replicas=1, gpus=1)
         .queue("user-queue").priority_class("dev-priority").build()
    wl = make_workload_for(rc).admitted(at=t0, cluster_queue="cluster-queue").build()
    wl = make_workload("ns", "rc-wl").owned_by(rc).pod_set("head", count=1, gpus=1)
         .queue("user-queue").admitted(at=t0).active(True).build(api_version=KUEUE_V1BETA1)
    pod = make_pod("ns", "rc-head-x").owned_by_raycluster("rc").gpus(1).running(since=t0).build()
    rc = make_raycluster("ns", "rc").head(gpus=1).kai_queue("team-a").build()  # KAI's
    job = make_rayjob("ns", "job").head(gpus=1).queue("user-queue")
    cluster = job.raycluster().build()  # the RayCluster KubeRay makes for the job

Every CRD-backed object they build validates against the upstream CRDs.
"""

from .common import GPU, Object, stable_uid, timestamp
from .kai import (
    KAI_PODGROUP_VERSION,
    KAI_QUEUE_VERSION,
    NO_LIMIT,
    POD_GROUP_ANNOTATION,
    KaiQueueBuilder,
    PodGroupBuilder,
    fraction_pod,
    kai_pod,
    make_kai_queue,
    make_podgroup,
)
from .pods import (
    CLUSTER_LABEL,
    GROUP_LABEL,
    NODE_TYPE_LABEL,
    PodBuilder,
    make_pod,
    scale_up_event,
)
from .queues import (
    ClusterQueueBuilder,
    KueueBuilder,
    LocalQueueBuilder,
    flavor_quota,
    make_cluster_queue,
    make_cohort,
    make_local_queue,
    make_resource_flavor,
    make_workload_priority_class,
    resource_group,
)
from .ray import (
    KAI_FRACTION,
    KAI_PRIORITY_LABEL,
    KAI_QUEUE_LABEL,
    ORIGIN_KIND_LABEL,
    ORIGIN_NAME_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_LABEL,
    RayClusterBuilder,
    RayJobBuilder,
    make_raycluster,
    make_rayjob,
)
from .workloads import (
    DEACTIVATED,
    JOB_UID_LABEL,
    KUEUE_V1BETA1,
    KUEUE_V1BETA2,
    WorkloadBuilder,
    make_workload,
    make_workload_for,
    workload_name_for,
)

__all__ = [
    "CLUSTER_LABEL",
    "DEACTIVATED",
    "GPU",
    "GROUP_LABEL",
    "JOB_UID_LABEL",
    "KAI_FRACTION",
    "KAI_PODGROUP_VERSION",
    "KAI_PRIORITY_LABEL",
    "KAI_QUEUE_LABEL",
    "KAI_QUEUE_VERSION",
    "KUEUE_V1BETA1",
    "KUEUE_V1BETA2",
    "NODE_TYPE_LABEL",
    "NO_LIMIT",
    "ORIGIN_KIND_LABEL",
    "ORIGIN_NAME_LABEL",
    "POD_GROUP_ANNOTATION",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_LABEL",
    "ClusterQueueBuilder",
    "KaiQueueBuilder",
    "KueueBuilder",
    "LocalQueueBuilder",
    "Object",
    "PodBuilder",
    "PodGroupBuilder",
    "RayClusterBuilder",
    "RayJobBuilder",
    "WorkloadBuilder",
    "flavor_quota",
    "fraction_pod",
    "kai_pod",
    "make_cluster_queue",
    "make_cohort",
    "make_kai_queue",
    "make_local_queue",
    "make_pod",
    "make_podgroup",
    "make_raycluster",
    "make_rayjob",
    "make_resource_flavor",
    "make_workload",
    "make_workload_for",
    "make_workload_priority_class",
    "resource_group",
    "scale_up_event",
    "stable_uid",
    "timestamp",
    "workload_name_for",
]
