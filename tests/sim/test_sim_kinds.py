"""The simulated cluster's other owner kinds (`sim.kinds`): a Notebook, a PyTorchJob, a
LeaderWorkerSet and a Deployment beside a RayCluster under one quota.

Expected behaviour from Kueue's docs and tests: the pod integration's stop deletes the pod and
the pod made again is a new Workload, pending (kueue site/content/en/docs/tasks/run/
deployment.md; test/integration/singlecluster/controller/jobs/pod/pod_controller_test.go,
"Should stop the single pod with the queue name"); a job's or a LeaderWorkerSet's Workload
stays, deactivated (kueue test/e2e/singlecluster/extended/leaderworkerset_test.go,
"shouldn't delete deactivated Workload"); pod names as each controller makes them.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.policy.owners import KNOWN_OWNERS
from autoscaler.sim.clock import SimulatedClock
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.kinds import SIM_KINDS
from autoscaler.sim.kueue_model import KueueState, LocalQueue, Phase
from autoscaler.sim.pods import GPU, GpuPool, RayClusterSpec, WorkerGroup
from autoscaler.sim.quota import ClusterQueue

START = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
NS = "team-a"


def at(minutes: float) -> datetime:
    return START + timedelta(minutes=minutes)


class Cluster(SimulatedCluster):
    def __init__(self, gpus: int) -> None:
        queue = ClusterQueue.from_nominal("cq", {"cpu": 64000, "memory": 256 * 2**30, GPU: gpus})
        kueue = KueueState().with_cluster_queue(queue).with_local_queue(LocalQueue(NS, "q", "cq"))
        self.clock = SimulatedClock(start=START, speed=None)
        super().__init__(kueue=kueue, gpus=GpuPool.for_gpus(gpus), clock=self.clock)


def cluster_of(gpus: int) -> Cluster:
    return Cluster(gpus)


def spec(kind: str, name: str, *, workers: int = 0, group: str = "worker") -> RayClusterSpec:
    groups = (WorkerGroup(group, replicas=workers, gpus=1),) if workers else ()
    return RayClusterSpec(NS, name, "q", head_gpus=1, workers=groups, kind=kind)


def pod_names(cluster: SimulatedCluster, ref: WorkloadRef) -> list[str]:
    return sorted(pod.name for pod in cluster.pods(ref))


def stop(cluster: Cluster, ref: WorkloadRef, *, minutes: float) -> None:
    """The service's deactivation, `minutes` after the start."""
    cluster.clock.advance(at(minutes) - cluster.clock.now())
    audit = DeactivationAudit(
        at=at(minutes), reason="idle", peak=0.0, threshold=0.05, policy="idle"
    )
    cluster.deactivate(ref, audit, gpus=1)


def test_each_kind_has_its_controllers_pods_and_owner_under_one_quota() -> None:
    cluster = cluster_of(8)
    notebook = cluster.create(spec("Notebook", "alice"), now=at(0))
    job = cluster.create(spec("PyTorchJob", "train-7", workers=2), now=at(0))
    server = cluster.create(spec("LeaderWorkerSet", "llm", workers=1), now=at(0))
    deployment = cluster.create(spec("Deployment", "embed"), now=at(0))
    ray = cluster.create(spec("RayCluster", "rc", workers=1, group="gpu-group"), now=at(0))

    cluster.step(now=at(1))

    assert pod_names(cluster, notebook) == ["alice-0"]
    assert pod_names(cluster, job) == ["train-7-master-0", "train-7-worker-0", "train-7-worker-1"]
    assert pod_names(cluster, server) == ["llm-0", "llm-0-1"]
    (embed_pod,) = pod_names(cluster, deployment)
    assert re.fullmatch(r"embed-[a-z0-9]{10}-[a-z0-9]{5}", embed_pod)
    assert all(
        name.startswith(("rc-head-", "rc-gpu-group-worker-")) for name in pod_names(cluster, ray)
    )
    owners = {ref: cluster.get_workload(ref).owner for ref in (notebook, job, server, deployment)}
    assert {(o.api_version, o.kind, o.name) for o in owners.values() if o} == {
        ("kubeflow.org/v1", "Notebook", "alice"),
        ("kubeflow.org/v1", "PyTorchJob", "train-7"),
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "llm"),
        ("apps/v1", "Deployment", "embed"),
    }
    assert notebook.name.startswith("pod-alice-0-")
    assert job.name.startswith("pytorchjob-train-7-")
    sets = [p.name for p in cluster.kueue().workload(job).pod_sets]
    assert sets == ["master", "worker"]
    labels = cluster.get_workload(job).pods[0].labels
    assert labels["training.kubeflow.org/job-name"] == "train-7"


def test_a_stopped_notebook_requeues_as_a_new_workload_behind_the_waiter() -> None:
    cluster = cluster_of(1)
    notebook = cluster.create(spec("Notebook", "alice"), now=at(0))
    cluster.step(now=at(1))
    waiter = cluster.create(spec("RayCluster", "rc"), now=at(2))
    cluster.step(now=at(3))
    assert cluster.kueue().workload(waiter).phase is Phase.PENDING

    stop(cluster, notebook, minutes=10)

    assert cluster.get_workload(notebook) is None
    (again,) = [r for r in cluster.kueue().workloads if r not in (notebook, waiter)]
    assert again.name.startswith("pod-alice-0-") and again != notebook
    assert cluster.kueue().workload(again).created_at == at(10)
    assert cluster.pods(again) == ()
    cluster.step(now=at(11))
    assert cluster.kueue().workload(waiter).phase is Phase.ADMITTED
    assert cluster.kueue().workload(again).phase is Phase.PENDING
    assert cluster.audits[-1].raycluster == f"Notebook {NS}/alice"


def test_a_stopped_pytorchjob_keeps_its_workload_deactivated_and_its_pods_go() -> None:
    cluster = cluster_of(4)
    job = cluster.create(spec("PyTorchJob", "hung", workers=1), now=at(0))
    cluster.step(now=at(1))

    stop(cluster, job, minutes=5)
    cluster.step(now=at(6))

    found = cluster.get_workload(job)
    assert found is not None and not found.active and not found.admitted
    assert cluster.pods(job) == ()
    assert list(cluster.kueue().workloads) == [job]


def test_each_simulated_kind_reads_its_api_version_and_requeue_from_its_table_row() -> None:
    for kind in SIM_KINDS.values():
        row = KNOWN_OWNERS[kind.kind]  # every kind the simulator plays has its row
        assert kind.api_version == row.api_version
        assert kind.requeues is not row.stop_lasts
    assert SIM_KINDS["Notebook"].requeues and not SIM_KINDS["PyTorchJob"].requeues
    assert SIM_KINDS["LeaderWorkerSet"].api_version == "leaderworkerset.x-k8s.io/v1"


def test_the_demo_names_a_ray_kind_by_its_name_and_another_as_people_know_it() -> None:
    assert spec("RayCluster", "rc").known_as == "rc"
    assert spec("RayJob", "nightly").known_as == "nightly"
    assert spec("Notebook", "alice").known_as == f"Notebook {NS}/alice"
    assert spec("PyTorchJob", "train-7").known_as == f"PyTorchJob {NS}/train-7"
