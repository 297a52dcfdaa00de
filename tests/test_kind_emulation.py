"""The life of every kind Kueue queues, on the test API server through `ClusterEmulator.sync()`:
created -> Workload queued -> admitted -> pods through the intermediates -> `active: false`
-> pods gone, the owner suspended, or pods made again as a new pending Workload.

Each expectation comes from Kueue's own tests or docs (cited per test), not from the
emulation: the Workload's name, owners and pod sets, what admission and eviction do.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.support.builders import kinds, make_rayjob, make_workload_for
from tests.support.builders.queues import make_cluster_queue, make_local_queue, make_resource_flavor
from tests.support.cluster_emulator import ClusterEmulator
from tests.support.crd_validation import assert_valid
from tests.support.kube_server import KubeServer
from tests.support.kube_server.store import Store
from tests.support.kueue_pod_sets import ADMISSION_GATE, workload_name

Object = dict[str, Any]
NS = "team-a"
WORKLOADS = "workloads.kueue.x-k8s.io"
T0 = datetime(2026, 8, 1, 9, 0, tzinfo=UTC)


class Cluster:
    """One ClusterQueue of `gpus` GPUs, the LocalQueue "user-queue" in NS, and the emulator."""

    def __init__(self, *, gpus: int) -> None:
        self.now = T0
        self.server = KubeServer(clock=lambda: self.now)
        self.store: Store = self.server.store
        self.store.put(make_resource_flavor().build())
        self.store.put(make_cluster_queue().quota(gpus=gpus).build())
        self.store.put(make_local_queue(NS).build())
        self.emulator = ClusterEmulator(self.server, clock=lambda: self.now, namespaces={NS})

    def apply(self, obj: Object) -> Object:
        """As a user applies it (a CRD-backed kind checked against its CRD first)."""
        if obj["apiVersion"] not in ("v1", "apps/v1", "batch/v1"):
            assert_valid(obj)
        return self.store.put(obj)

    def sync(self, *, minutes: int = 1) -> None:
        self.now += timedelta(minutes=minutes)
        self.emulator.sync()

    def workloads(self) -> list[Object]:
        return self.store.list(WORKLOADS, namespace=NS)

    def workload(self) -> Object:
        (only,) = self.workloads()
        return only

    def pods(self) -> list[Object]:
        return self.store.list("pods", namespace=NS)

    def get(self, key: str, name: str) -> Object:
        return self.store.get(key, name=name, namespace=NS)

    def deactivate(self, workload: Object) -> None:
        self.store.patch(
            WORKLOADS,
            name=workload["metadata"]["name"],
            namespace=NS,
            patch={"spec": {"active": False}},
        )


def admitted(workload: Object) -> bool:
    conditions = {c["type"]: c["status"] for c in workload.get("status", {}).get("conditions", [])}
    return conditions.get("Admitted") == "True"


def owners(obj: Object) -> list[tuple[str, str, bool]]:
    return [
        (ref["kind"], ref["name"], bool(ref.get("controller")))
        for ref in obj["metadata"].get("ownerReferences", [])
    ]


def pod_sets(workload: Object) -> list[tuple[str, int]]:
    return [(ps["name"], ps["count"]) for ps in workload["spec"]["podSets"]]


def running(pods: list[Object]) -> bool:
    return bool(pods) and all(
        p["status"]["phase"] == "Running" and not p["spec"].get("schedulingGates") for p in pods
    )


def gated(pods: list[Object]) -> bool:
    return bool(pods) and all(
        {"name": ADMISSION_GATE} in p["spec"].get("schedulingGates", []) for p in pods
    )


LONG_NAME = (
    "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-"
    "department-social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-"
    "engineering-team-lead-senior-architect-validation-checked-approved-by-legal-and-ops-dept"
)


@pytest.mark.parametrize(
    ("name", "extra", "expected"),
    [
        ("name", "", "job-name-ef3a1"),
        ("name", "1", "job-name-2514c"),
        (
            LONG_NAME,
            "",
            "job-marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-"
            "sub-department-social-media-engagement-tracker-and-analytics-dashboard-v2-final-"
            "revision-by-engineering-team-lead-senior-architect-validation-checked-approved-by-l"
            "-218b8",
        ),
    ],
)
def test_the_workload_name_is_kueues(name: str, extra: str, expected: str) -> None:
    """kueue pkg/controller/jobframework/workload_names_test.go, TestGenerateWorkloadNameWithExtra
    (ShortWorkloadNames=false): a batch Job with uid "uid"."""
    assert workload_name("Job", "batch", name, "uid", extra) == expected


def test_a_jobset_is_suspended_until_admitted_then_runs_jobs_and_is_suspended_again() -> None:
    """kueue test/integration/singlecluster/controller/jobs/jobset/jobset_controller_test.go,
    "Should reconcile JobSets": a Workload controlled by the JobSet, one pod set per replicated
    job of replicas x parallelism pods; admission unsuspends it; deactivation suspends it."""
    cluster = Cluster(gpus=8)
    jobset = cluster.apply(
        kinds.make_jobset(NS, "train", queue="user-queue", jobs={"workers": (2, 2)})
    )

    cluster.sync()

    workload = cluster.workload()
    assert owners(workload) == [("JobSet", "train", True)]
    assert pod_sets(workload) == [("workers", 4)]
    assert workload["spec"]["queueName"] == "user-queue"
    assert admitted(workload)
    assert cluster.get("jobsets.jobset.x-k8s.io", "train")["spec"]["suspend"] is False
    jobs = cluster.store.list("jobs.batch", namespace=NS)
    assert sorted(j["metadata"]["name"] for j in jobs) == ["train-workers-0", "train-workers-1"]
    assert all(owners(j) == [("JobSet", "train", True)] for j in jobs)
    pods = cluster.pods()
    assert len(pods) == 4 and running(pods)
    assert {owners(p)[0][:2] for p in pods} == {
        ("Job", "train-workers-0"),
        ("Job", "train-workers-1"),
    }

    cluster.deactivate(workload)
    cluster.sync()

    assert cluster.get("jobsets.jobset.x-k8s.io", "train")["spec"]["suspend"] is True
    assert all(j["spec"]["suspend"] for j in cluster.store.list("jobs.batch", namespace=NS))
    assert cluster.pods() == []
    assert not admitted(cluster.workload())
    assert (
        jobset["metadata"]["uid"]
        == cluster.workload()["metadata"]["labels"]["kueue.x-k8s.io/job-uid"]
    )


def test_a_jobset_created_unsuspended_is_suspended_by_kueue_before_any_pod() -> None:
    """kueue site/content/en/docs/tasks/run/jobsets.md: Kueue's webhook suspends a queued
    JobSet; nothing runs while its Workload waits for quota (the JobSet controller makes its
    Jobs suspended, kubernetes-sigs/jobset pkg/controllers/jobset_controller.go)."""
    cluster = Cluster(gpus=1)
    jobset = kinds.make_jobset(NS, "big", queue="user-queue", jobs={"workers": (1, 4)})
    jobset["spec"]["suspend"] = False
    cluster.apply(jobset)

    cluster.sync()

    assert cluster.get("jobsets.jobset.x-k8s.io", "big")["spec"]["suspend"] is True
    assert not admitted(cluster.workload())
    assert cluster.pods() == []
    assert all(job["spec"]["suspend"] for job in cluster.store.list("jobs.batch", namespace=NS))


def test_a_pytorchjob_runs_master_and_workers_and_its_pods_go_when_suspended() -> None:
    """kueue test/e2e/singlecluster/extended/pytorchjob_test.go and
    site/content/en/docs/tasks/run/kubeflow/pytorchjobs.md: pod sets "master" and "worker",
    `spec.runPolicy.suspend` unset on admission; the training operator's pods are deleted
    when the job is suspended."""
    cluster = Cluster(gpus=8)
    cluster.apply(kinds.make_pytorchjob(NS, "hung", queue="user-queue", workers=2))

    cluster.sync()

    workload = cluster.workload()
    assert owners(workload) == [("PyTorchJob", "hung", True)]
    assert pod_sets(workload) == [("master", 1), ("worker", 2)]
    assert cluster.get("pytorchjobs.kubeflow.org", "hung")["spec"]["runPolicy"]["suspend"] is False
    pods = cluster.pods()
    assert sorted(p["metadata"]["name"] for p in pods) == [
        "hung-master-0",
        "hung-worker-0",
        "hung-worker-1",
    ]
    assert running(pods)

    cluster.deactivate(workload)
    cluster.sync()

    assert cluster.get("pytorchjobs.kubeflow.org", "hung")["spec"]["runPolicy"]["suspend"] is True
    assert cluster.pods() == []


@pytest.mark.parametrize(
    ("kind", "replicas", "expected_sets", "master"),
    [
        # kueue tfjob_controller_test.go, "Should reconcile TFJobs": Chief, PS, Worker
        (
            "TFJob",
            {"Worker": 2, "PS": 1, "Chief": 1},
            [("chief", 1), ("ps", 1), ("worker", 2)],
            "chief-0",
        ),
        # kueue xgboostjob_controller_test.go, "Should reconcile XGBoostJobs": Master, Worker
        ("XGBoostJob", {"Worker": 2, "Master": 1}, [("master", 1), ("worker", 2)], "master-0"),
        # kueue paddlejob_controller_test.go, "Should reconcile PaddleJobs": Master, Worker
        ("PaddleJob", {"Worker": 2, "Master": 1}, [("master", 1), ("worker", 2)], "master-0"),
        # kueue jaxjob_controller_test.go, "Should reconcile JAXJobs": Worker only
        ("JAXJob", {"Worker": 2}, [("worker", 2)], "worker-0"),
    ],
)
def test_pytorchjobs_siblings_run_a_pod_per_replica_and_lose_them_when_suspended(
    kind: str, replicas: dict[str, int], expected_sets: list[tuple[str, int]], master: str
) -> None:
    """kueue test/integration/singlecluster/controller/jobs/<kind>/<kind>_controller_test.go:
    one pod set per replica type, in the kind's order whatever the spec's, `runPolicy.suspend`
    unset on admission and set again on eviction. The training operator (v1.9.0
    pkg/controller.v1/common/pod.go, createNewPod; each kind's IsMasterRole) makes the pods
    `<job>-<type>-<index>`, controlled by the job, its master labelled `job-role: master`,
    and deletes them when the job is suspended."""
    cluster = Cluster(gpus=8)
    job = cluster.apply(
        kinds.make_kubeflow_job(kind, NS, "fit", queue="user-queue", replicas=replicas)
    )
    key = f"{kind.lower()}s.kubeflow.org"

    cluster.sync()

    workload = cluster.workload()
    assert workload["metadata"]["name"] == workload_name(
        kind, "kubeflow.org", "fit", job["metadata"]["uid"]
    )
    assert owners(workload) == [(kind, "fit", True)]
    assert pod_sets(workload) == expected_sets
    assert admitted(workload)
    assert cluster.get(key, "fit")["spec"]["runPolicy"]["suspend"] is False
    pods = {p["metadata"]["name"]: p for p in cluster.pods()}
    assert sorted(pods) == sorted(
        f"fit-{name}-{i}" for name, count in expected_sets for i in range(count)
    )
    assert running(list(pods.values()))
    assert all(owners(p) == [(kind, "fit", True)] for p in pods.values())
    labels = pods[f"fit-{master}"]["metadata"]["labels"]
    assert labels["training.kubeflow.org/operator-name"] == f"{kind.lower()}-controller"
    assert labels["training.kubeflow.org/replica-type"] == master.rpartition("-")[0]
    leads = [
        n
        for n, p in pods.items()
        if p["metadata"]["labels"].get("training.kubeflow.org/job-role") == "master"
    ]
    assert leads == [f"fit-{master}"]

    cluster.deactivate(workload)
    cluster.sync()

    assert cluster.get(key, "fit")["spec"]["runPolicy"]["suspend"] is True
    assert cluster.pods() == []
    assert not admitted(cluster.workload())


def test_an_mpijob_runs_workers_and_a_launcher_job_which_stays_suspended_after_a_stop() -> None:
    """kueue test/integration/singlecluster/controller/jobs/mpijob/mpijob_controller_test.go,
    "Should reconcile MPIJobs": pod sets "launcher" then "worker", `runPolicy.suspend` unset on
    admission. mpi-operator (pkg/controller/mpi_job_controller.go, newWorker and
    newLauncherJob): the workers are pods `<job>-worker-<index>` and the launcher a Job
    `<job>-launcher`, both controlled by the MPIJob; suspended, the launcher Job is suspended
    (its pod deleted) and the workers deleted."""
    cluster = Cluster(gpus=8)
    cluster.apply(
        kinds.make_kubeflow_job(
            "MPIJob", NS, "pi", queue="user-queue", replicas={"Worker": 2, "Launcher": 1}
        )
    )

    cluster.sync()

    workload = cluster.workload()
    assert owners(workload) == [("MPIJob", "pi", True)]
    assert pod_sets(workload) == [("launcher", 1), ("worker", 2)]
    assert cluster.get("mpijobs.kubeflow.org", "pi")["spec"]["runPolicy"]["suspend"] is False
    launcher = cluster.get("jobs.batch", "pi-launcher")
    assert owners(launcher) == [("MPIJob", "pi", True)] and launcher["spec"]["suspend"] is False
    pods = cluster.pods()
    assert running(pods) and len(pods) == 3
    workers = sorted(p["metadata"]["name"] for p in pods if owners(p) == [("MPIJob", "pi", True)])
    assert workers == ["pi-worker-0", "pi-worker-1"]
    (launcher_pod,) = [p for p in pods if owners(p) == [("Job", "pi-launcher", True)]]
    assert launcher_pod["metadata"]["labels"]["training.kubeflow.org/job-role"] == "launcher"
    assert {p["metadata"]["labels"]["training.kubeflow.org/operator-name"] for p in pods} == {
        "mpi-operator"
    }

    cluster.deactivate(workload)
    cluster.sync()

    assert cluster.get("mpijobs.kubeflow.org", "pi")["spec"]["runPolicy"]["suspend"] is True
    assert cluster.get("jobs.batch", "pi-launcher")["spec"]["suspend"] is True
    assert cluster.pods() == []
    assert not admitted(cluster.workload())


def test_a_batch_job_is_one_main_pod_set_unsuspended_on_admission_and_suspended_again() -> None:
    """kueue test/integration/singlecluster/controller/jobs/job/job_controller_test.go,
    "Should reconcile workload and job for all jobs": a Workload controlled by the Job, its one
    pod set "main" of `parallelism` pods; admission unsuspends the Job; a deactivated Workload
    suspends it and the Job controller deletes its active pods."""
    cluster = Cluster(gpus=4)
    cluster.apply(kinds.make_batch_job(NS, "etl", pods=2, queue="user-queue"))

    cluster.sync()

    workload = cluster.workload()
    assert owners(workload) == [("Job", "etl", True)]
    assert pod_sets(workload) == [("main", 2)]
    assert admitted(workload)
    assert cluster.get("jobs.batch", "etl")["spec"]["suspend"] is False
    pods = cluster.pods()
    assert len(pods) == 2 and running(pods)
    assert {p["metadata"]["labels"]["batch.kubernetes.io/job-name"] for p in pods} == {"etl"}

    cluster.deactivate(workload)
    cluster.sync()

    assert cluster.get("jobs.batch", "etl")["spec"]["suspend"] is True
    assert cluster.pods() == []
    assert not admitted(cluster.workload())


def test_a_rayjob_gets_its_raycluster_once_admitted_and_loses_it_when_suspended() -> None:
    """kueue test/integration/singlecluster/controller/jobs/rayjob/rayjob_controller_test.go,
    "Should reconcile RayJobs": the RayJob unsuspended on admission, suspended on eviction;
    KubeRay (ray-operator/controllers/ray/rayjob_controller.go) then makes a RayCluster
    labelled with the job it came from, and deletes it when the job is suspended. The pods
    are the RayCluster's, labelled as any RayCluster's (common/pod.go labelPod): the job's
    `ray.io/originated-from-*` labels stay on the RayCluster."""
    cluster = Cluster(gpus=4)
    rayjob = make_rayjob(NS, "sweep").head(gpus=1).queue("user-queue").build()
    cluster.apply(rayjob)
    cluster.store.put(make_workload_for(rayjob).build())  # Kueue's webhook makes it at once

    cluster.sync()

    assert cluster.get("rayjobs.ray.io", "sweep")["spec"]["suspend"] is False
    (raycluster,) = cluster.store.list("rayclusters.ray.io", namespace=NS)
    assert owners(raycluster) == [("RayJob", "sweep", True)]
    assert raycluster["metadata"]["labels"]["ray.io/originated-from-cr-name"] == "sweep"
    (pod,) = cluster.pods()
    assert pod["metadata"]["labels"]["ray.io/cluster"] == raycluster["metadata"]["name"]
    assert "ray.io/originated-from-cr-name" not in pod["metadata"]["labels"]
    assert owners(pod) == [("RayCluster", raycluster["metadata"]["name"], True)]
    assert running([pod])

    cluster.deactivate(cluster.workload())
    cluster.sync()

    assert cluster.get("rayjobs.ray.io", "sweep")["spec"]["suspend"] is True
    assert cluster.store.list("rayclusters.ray.io", namespace=NS) == []
    assert cluster.pods() == []


def test_a_trainjob_makes_a_jobset_from_its_runtime_then_jobs_then_pods() -> None:
    """kueue test/integration/singlecluster/controller/jobs/trainjob/trainjob_controller_test.go,
    "Should reconcile Trainjobs": the Workload's pod sets are the runtime's JobSet's (the "node"
    job with numNodes pods); admission unsuspends the TrainJob and the trainer its JobSet."""
    cluster = Cluster(gpus=8)
    cluster.store.put(kinds.make_training_runtime("torch-distributed", gpus=2))
    cluster.apply(
        kinds.make_trainjob(NS, "tune", queue="user-queue", runtime="torch-distributed", nodes=3)
    )

    cluster.sync()

    workload = cluster.workload()
    assert owners(workload) == [("TrainJob", "tune", True)]
    assert pod_sets(workload) == [("node", 3)]
    jobset = cluster.get("jobsets.jobset.x-k8s.io", "tune")
    assert owners(jobset) == [("TrainJob", "tune", True)] and jobset["spec"]["suspend"] is False
    (job,) = cluster.store.list("jobs.batch", namespace=NS)
    assert owners(job) == [("JobSet", "tune", True)]
    assert len(cluster.pods()) == 3 and running(cluster.pods())

    cluster.deactivate(workload)
    cluster.sync()

    assert cluster.get("trainjobs.trainer.kubeflow.org", "tune")["spec"]["suspend"] is True
    assert cluster.get("jobsets.jobset.x-k8s.io", "tune")["spec"]["suspend"] is True
    assert cluster.pods() == []


def test_an_appwrapper_makes_its_components_once_admitted_and_removes_them_on_eviction() -> None:
    """kueue test/integration/singlecluster/controller/jobs/appwrapper/
    appwrapper_controller_test.go, "Should reconcile AppWrappers", and
    site/content/en/docs/tasks/run/appwrappers.md: one pod set per declared pod set, named
    `<appwrapper>-<index>`; the AppWrapper controller deploys the wrapped resources when
    unsuspended and removes them when suspended."""
    cluster = Cluster(gpus=8)
    job = kinds.make_batch_job(NS, "wrapped", pods=2)
    cluster.apply(kinds.make_appwrapper(NS, "aw", queue="user-queue", job=job))

    cluster.sync()

    workload = cluster.workload()
    assert owners(workload) == [("AppWrapper", "aw", True)]
    assert pod_sets(workload) == [("aw-0", 2)]
    (wrapped,) = cluster.store.list("jobs.batch", namespace=NS)
    assert owners(wrapped) == [("AppWrapper", "aw", True)]
    assert len(cluster.pods()) == 2 and running(cluster.pods())
    # appwrapper internal/controller/appwrapper/resource_management.go: the pods are labelled
    assert {
        p["metadata"]["labels"]["workload.codeflare.dev/appwrapper"] for p in cluster.pods()
    } == {"aw"}

    cluster.deactivate(workload)
    cluster.sync()

    assert cluster.get("appwrappers.workload.codeflare.dev", "aw")["spec"]["suspend"] is True
    assert cluster.store.list("jobs.batch", namespace=NS) == [] and cluster.pods() == []


def test_a_leaderworkerset_keeps_its_deactivated_workload_and_its_pods_come_back_gated() -> None:
    """kueue test/e2e/singlecluster/extended/leaderworkerset_test.go, "shouldn't delete
    deactivated Workload": size 3, one group; after `active: false` the 3 pods are gated
    again and the Workload (same uid) stays deactivated."""
    cluster = Cluster(gpus=8)
    cluster.apply(
        kinds.make_leaderworkerset(NS, "lws", queue="user-queue", size=3, leader_template=False)
    )

    cluster.sync()

    workload = cluster.workload()
    assert workload["metadata"]["name"].startswith("leaderworkerset-lws-0-")
    assert pod_sets(workload) == [("main", 3)]
    assert admitted(workload)
    pods = cluster.pods()
    assert sorted(p["metadata"]["name"] for p in pods) == ["lws-0", "lws-0-1", "lws-0-2"]
    assert running(pods)
    assert ("LeaderWorkerSet", "lws", False) in owners(workload)
    assert not any(controller for _, _, controller in owners(workload))
    worker_set = cluster.get("statefulsets.apps", "lws-0")
    assert owners(worker_set) == [("Pod", "lws-0", True)]

    cluster.deactivate(workload)
    cluster.sync()

    pods = cluster.pods()
    assert len(pods) == 3 and gated(pods)
    after = cluster.workload()
    assert after["metadata"]["uid"] == workload["metadata"]["uid"]
    assert after["spec"]["active"] is False


def test_a_leaderworkerset_has_one_workload_per_group_with_leader_and_worker_pod_sets() -> None:
    """kueue test/e2e/singlecluster/extended/leaderworkerset_test.go, "should admit group with
    multiple leaders and workers that fits": one Workload per group, pod sets "leader" (1) and
    "worker" (size - 1)."""
    cluster = Cluster(gpus=8)
    cluster.apply(kinds.make_leaderworkerset(NS, "serve", queue="user-queue", groups=2, size=2))

    cluster.sync()

    workloads = cluster.workloads()
    assert sorted(w["metadata"]["name"].rsplit("-", 1)[0] for w in workloads) == [
        "leaderworkerset-serve-0",
        "leaderworkerset-serve-1",
    ]
    assert all(pod_sets(w) == [("leader", 1), ("worker", 1)] for w in workloads)
    assert len(cluster.pods()) == 4 and running(cluster.pods())


def test_a_statefulset_is_one_pod_group_owned_by_the_set_and_its_pods_and_the_stop_lasts() -> None:
    """kueue test/e2e/singlecluster/baseline/statefulset_test.go, "should admit group that
    fits" (one Workload with the JobUID label) and site/content/en/docs/tasks/run/
    statefulset.md (a StatefulSet is a single Workload); pods evicted are made again gated."""
    cluster = Cluster(gpus=8)
    sts = cluster.apply(kinds.make_statefulset(NS, "infer", queue="user-queue", replicas=2))

    cluster.sync()

    workload = cluster.workload()
    assert workload["metadata"]["labels"]["kueue.x-k8s.io/job-uid"] == sts["metadata"]["uid"]
    assert pod_sets(workload) == [("main", 2)]
    assert sorted(owners(workload)) == [
        ("Pod", "infer-0", False),
        ("Pod", "infer-1", False),
        ("StatefulSet", "infer", False),
    ]
    assert running(cluster.pods())

    cluster.deactivate(workload)
    cluster.sync()

    pods = cluster.pods()
    assert sorted(p["metadata"]["name"] for p in pods) == ["infer-0", "infer-1"] and gated(pods)
    assert cluster.workload()["metadata"]["uid"] == workload["metadata"]["uid"]


def test_a_deployment_pod_is_a_workload_of_its_own_and_a_stop_requeues_it_behind_the_waiter() -> (
    None
):
    """kueue site/content/en/docs/tasks/run/deployment.md (each pod a Workload; new pods stay
    gated until theirs is admitted) and test/e2e/singlecluster/baseline/deployment_test.go,
    "should admit workloads that fits"; kueue site/content/en/docs/tasks/run/plain_pods.md
    ("Kueue will patch the pods and remove this scheduling gate"; preempting a pod group
    deletes its pods). Here the ReplicaSet replaces the deleted pod, whose new Workload is
    created after the waiting notebook's and queues behind it."""
    cluster = Cluster(gpus=1)
    cluster.apply(kinds.make_deployment(NS, "server", queue="user-queue", replicas=1))
    cluster.sync()
    (first,) = cluster.workloads()
    assert owners(first)[0][0] == "Pod" and owners(first)[0][2] is True
    assert pod_sets(first) == [("main", 1)] and admitted(first)
    (replicaset,) = cluster.store.list("replicasets.apps", namespace=NS)
    assert owners(replicaset) == [("Deployment", "server", True)]
    (pod,) = cluster.pods()
    assert owners(pod) == [("ReplicaSet", replicaset["metadata"]["name"], True)] and running([pod])

    cluster.apply(kinds.make_notebook(NS, "alice", queue="user-queue"))
    cluster.sync()
    waiting = next(
        w for w in cluster.workloads() if w["metadata"]["name"].startswith("pod-alice-0-")
    )
    assert not admitted(waiting)
    assert owners(cluster.get("statefulsets.apps", "alice")) == [("Notebook", "alice", True)]

    cluster.deactivate(first)
    cluster.sync()
    names = {w["metadata"]["name"] for w in cluster.workloads()}
    assert first["metadata"]["name"] not in names
    assert admitted(cluster.get(WORKLOADS, waiting["metadata"]["name"]))
    assert running([cluster.get("pods", "alice-0")])
    (replacement,) = [
        w for w in cluster.workloads() if w["metadata"]["name"].startswith("pod-server-")
    ]
    assert not admitted(replacement) and replacement["spec"].get("active", True)
    server_pods = [p for p in cluster.pods() if p["metadata"]["name"].startswith("server-")]
    assert len(server_pods) == 1 and gated(server_pods)
    assert server_pods[0]["metadata"]["name"] != pod["metadata"]["name"]

    cluster.sync()
    assert not admitted(cluster.get(WORKLOADS, replacement["metadata"]["name"]))


def test_a_notebooks_pod_is_gated_until_admitted_and_made_again_gated_after_a_stop() -> None:
    """kueue site/content/en/docs/tasks/run/plain_pods.md ("Kueue injects the
    kueue.x-k8s.io/admission scheduling gate"; a Workload per pod, owned by it) and
    test/integration/singlecluster/controller/jobs/pod/pod_controller_test.go, "Should stop
    the single pod with the queue name" (evicted: the pod is deleted). The notebook's
    StatefulSet makes the pod again, gated: a new Workload, pending."""
    cluster = Cluster(gpus=1)
    cluster.apply(kinds.make_notebook(NS, "bob", queue="user-queue"))
    cluster.sync()
    workload = cluster.workload()
    (pod,) = cluster.pods()
    assert owners(workload) == [("Pod", "bob-0", True)] and admitted(workload)
    assert owners(pod) == [("StatefulSet", "bob", True)] and running([pod])
    assert pod["metadata"]["labels"]["notebook-name"] == "bob"

    cluster.deactivate(workload)
    cluster.sync()

    (again,) = cluster.workloads()
    assert again["metadata"]["uid"] != workload["metadata"]["uid"]
    assert again["spec"].get("active", True) and not admitted(again)
    (recreated,) = cluster.pods()
    assert recreated["metadata"]["uid"] != pod["metadata"]["uid"] and gated([recreated])
    cluster.sync()
    assert running(cluster.pods())


@pytest.mark.parametrize("size", [1, 2])
def test_plain_pods_and_pod_groups_wait_for_the_whole_group(size: int) -> None:
    """kueue test/e2e/singlecluster/baseline/pod_test.go, "Should only admit a complete
    group", and plain_pods.md ("The name of the associated Workload ... equals the name of
    the Pod group"): no Workload until every pod of the group exists; then one, owned by
    every pod, none controller; admitted, every gate goes; evicted, the pods are deleted."""
    cluster = Cluster(gpus=4)
    group = None if size == 1 else "grp"
    cluster.apply(kinds.make_plain_pod(NS, "p-0", queue="user-queue", group=group, group_size=size))
    cluster.sync()
    if size == 2:
        assert cluster.workloads() == [] and gated(cluster.pods())
        cluster.apply(
            kinds.make_plain_pod(NS, "p-1", queue="user-queue", group="grp", group_size=2)
        )
        cluster.sync()
    workload = cluster.workload()
    if size == 2:
        assert workload["metadata"]["name"] == "grp"
        assert sorted(owners(workload)) == [("Pod", "p-0", False), ("Pod", "p-1", False)]
    else:
        assert owners(workload) == [("Pod", "p-0", True)]
    assert admitted(workload) and running(cluster.pods())

    cluster.deactivate(workload)
    cluster.sync()

    assert cluster.pods() == []
