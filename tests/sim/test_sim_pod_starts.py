"""The simulated cluster says whether its pods run as the kubelet and Kueue do, through the
`ClusterReader` port, in the same domain facts the real adapter reads from the objects: the
not-running class judges the demo as it judges a real cluster.

The kubelet's words are upstream's (kubernetes pkg/kubelet/images/image_manager.go,
EnsureImageExists: `ErrImagePull` after a failed pull, then `ImagePullBackOff` with
`Back-off pulling image "<image>"` while the back-off, 10 s at first, runs)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from autoscaler.adapters.kubernetes.objects import parse_pod
from autoscaler.domain.models import PodInfo, State, WorkloadInfo, WorkloadRef
from autoscaler.domain.usage.not_running import judge_start
from autoscaler.settings.rules import default_rule
from autoscaler.settings.tree import Settings
from autoscaler.sim.clock import SimulatedClock
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.kueue_model import KueueState, LocalQueue
from autoscaler.sim.pods import GPU, GpuPool, RayClusterSpec, WorkerGroup
from autoscaler.sim.quota import ClusterQueue
from tests.support.builders import make_pod
from tests.support.builders.common import timestamp

START = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
MISSING = "ghcr.io/x/trainer:v2"  # the registry does not have it
RULES = default_rule(Settings()).usage  # the product's: notRunningAfter 30 minutes


def minutes(n: float) -> datetime:
    return START + timedelta(minutes=n)


def raycluster(name: str, *, published: bool = True) -> RayClusterSpec:
    group = WorkerGroup("small-group", replicas=1, gpus=1)
    spec = RayClusterSpec("demo", name, "user-queue", head_gpus=1, workers=(group,))
    return spec if published else replace(spec, image=MISSING, image_published=False)


def cluster_of(gpus: int) -> tuple[SimulatedCluster, SimulatedClock]:
    queue = ClusterQueue.from_nominal("cq", {"cpu": 90_000, "memory": 360 * 2**30, GPU: gpus})
    kueue = (
        KueueState()
        .with_cluster_queue(queue)
        .with_local_queue(LocalQueue("demo", "user-queue", "cq"))
    )
    clock = SimulatedClock(start=START, speed=None)
    return SimulatedCluster(kueue=kueue, gpus=GpuPool.for_gpus(gpus), clock=clock), clock


def info(cluster: SimulatedCluster, ref: WorkloadRef) -> WorkloadInfo:
    found = cluster.get_workload(ref)
    assert found is not None
    return found


def waits(pod: PodInfo) -> list[tuple[str, str, str]]:
    return [(w.reason, w.image, w.message) for w in pod.waiting]


def test_a_pod_whose_image_cannot_be_pulled_fails_its_pull_then_backs_off_and_never_runs() -> None:
    cluster, clock = cluster_of(gpus=2)
    ref = cluster.create(raycluster("broken", published=False), now=minutes(0))
    cluster.step(now=minutes(0))

    first = info(cluster, ref).pods
    clock.advance(timedelta(seconds=10))  # the kubelet's first back-off has begun
    backing_off = info(cluster, ref).pods
    clock.advance(timedelta(hours=2))
    later = info(cluster, ref).pods

    assert [w[0] for p in first for w in waits(p)] == ["ErrImagePull", "ErrImagePull"]
    assert all(f"{MISSING}: not found" in w[2] for p in first for w in waits(p))
    back_off = ("ImagePullBackOff", MISSING, f'Back-off pulling image "{MISSING}"')
    assert [waits(p) for p in backing_off] == [[back_off], [back_off]]
    assert [waits(p) for p in later] == [[back_off], [back_off]]
    assert {p.phase for p in later} == {"Pending"} and not any(p.gpu_containers_run for p in later)
    assert cluster.list_gpu_pods() == []
    assert cluster.gpu_holdings() == ()  # no running container: no series names its GPUs


def test_a_pullable_pod_is_creating_its_container_until_it_runs() -> None:
    cluster, clock = cluster_of(gpus=2)
    ref = cluster.create(raycluster("fine"), now=minutes(0))
    cluster.step(now=minutes(0))

    starting = info(cluster, ref).pods
    clock.advance(timedelta(minutes=1))
    started = info(cluster, ref).pods

    assert [[w[0] for w in waits(p)] for p in starting] == [["ContainerCreating"]] * 2
    assert [(p.phase, p.waiting, p.gpu_containers_run) for p in started] == [
        ("Running", (), True)
    ] * 2


def test_the_simulated_pod_gives_the_domain_what_the_adapter_reads_from_the_kubelets_pod() -> None:
    cluster, clock = cluster_of(gpus=2)
    ref = cluster.create(raycluster("broken", published=False), now=minutes(0))
    cluster.step(now=minutes(0))
    clock.advance(timedelta(minutes=1))
    simulated = info(cluster, ref).pods[1]
    kubelets = (
        make_pod("demo", simulated.name)
        .owned_by_raycluster("broken")
        .gpus(1)
        .node(simulated.node or "")
        .image(MISSING)
        .image_pull_failing(since=minutes(0))
        .build()
    )
    kubelets["metadata"]["creationTimestamp"] = timestamp(minutes(0))

    read = parse_pod(kubelets, [GPU])

    assert waits(read) == waits(simulated)
    assert (read.phase, read.gpu_containers_run, read.unschedulable, read.gpus) == (
        simulated.phase,
        simulated.gpu_containers_run,
        simulated.unschedulable,
        simulated.gpus,
    )


def test_the_workload_says_its_admission_as_kueue_writes_it_and_counts_from_a_reactivation() -> (
    None
):
    cluster, _ = cluster_of(gpus=2)
    ref = cluster.create(raycluster("broken", published=False), now=minutes(0))
    waiter = cluster.create(raycluster("waiter"), now=minutes(0))
    cluster.step(now=minutes(0))

    admitted, pending = info(cluster, ref).admission, info(cluster, waiter).admission
    cluster.set_active(ref, active=False, now=minutes(40))
    cluster.set_active(waiter, active=False, now=minutes(40))  # its quota back, for the next
    cluster.set_active(ref, active=True, now=minutes(50))
    cluster.step(now=minutes(50))
    again = info(cluster, ref).admission

    assert admitted is not None and pending is not None and again is not None
    assert (admitted.gpus, admitted.pods_read, admitted.scale_ups_read) == (2, True, True)
    assert (admitted.pods_ready, admitted.pending_checks, admitted.reactivated_at) == (
        None,
        (),
        None,
    )
    assert pending.gpus == 0  # nothing admitted: nothing charged
    assert (again.gpus, again.reactivated_at) == (2, minutes(50))


def test_the_not_running_class_judges_the_simulated_cluster_from_those_facts() -> None:
    cluster, clock = cluster_of(gpus=4)
    broken = cluster.create(raycluster("broken", published=False), now=minutes(0))
    fine = cluster.create(raycluster("fine"), now=minutes(0))
    cluster.step(now=minutes(0))
    at_admission = judge_start(info(cluster, fine), rules=RULES, now=minutes(0))
    clock.advance(timedelta(minutes=31))

    stuck = judge_start(info(cluster, broken), rules=RULES, now=minutes(31))
    running = judge_start(info(cluster, fine), rules=RULES, now=minutes(31))

    assert at_admission is not None and at_admission.state is State.UNKNOWN
    assert "ContainerCreating" in at_admission.reason  # starting: never stuck
    assert stuck is not None and stuck.state is State.NOT_RUNNING
    assert f"image {MISSING} cannot be pulled (ImagePullBackOff)" in stuck.reason
    assert (stuck.idle_since, stuck.idle_for, stuck.left_to) == (
        minutes(0),
        timedelta(minutes=31),
        None,
    )
    assert running is None  # every GPU pod runs: the metrics judge it
