"""Pod discovery for every owner kind over the test API server, the objects made by the kinds'
emulated controllers (tests/support/kind_controllers.py): a constant number of requests per
cycle whatever the number of kinds and Workloads, counted on the server's request log, with
watch caches off (a fixed set of list calls) and on (none after the first lists); a
`cluster.ownerKinds` podSelector still wins over ownership; an intermediate kind that cannot
be read makes its Workloads unknown, with the reason, never idle.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kueue.cached import CachedKueueCluster
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.domain.models import State, WorkloadInfo
from autoscaler.domain.policy.owners import KNOWN_OWNERS
from autoscaler.domain.usage.assessment import UsageRules
from autoscaler.domain.usage.not_running import judge_start
from autoscaler.settings.ha import WatchCacheSettings
from autoscaler.settings.tree import ClusterSettings, OwnerKindSettings
from tests.support.builders import kinds, make_pod, make_raycluster, make_workload_for
from tests.support.builders.kinds import pod_template
from tests.support.builders.queues import make_cluster_queue, make_local_queue, make_resource_flavor
from tests.support.cluster_emulator import ClusterEmulator
from tests.support.kube_server import KubeServer

T0 = datetime(2026, 8, 1, 9, 0, tzinfo=UTC)
NS = "team-a"
RUNTIME = "torch-distributed"
ALL_KINDS = ClusterSettings(
    service_namespace="iga",
    runtime_state_config_map="iga-state",
    owner_kinds={kind: OwnerKindSettings(enabled=True) for kind in KNOWN_OWNERS},
)
CACHE = WatchCacheSettings.model_validate({"watchTimeout": "2s", "syncTimeout": "10s"})


def submit_one_of_each(server: KubeServer, suffix: str) -> None:
    """One Workload of 1 GPU of each kind the emulation runs, as its users submit them."""
    put, q = server.store.put, "user-queue"
    raycluster = make_raycluster(NS, f"rc-{suffix}").head(gpus=1).queue(q).build()
    put(raycluster)
    put(make_workload_for(raycluster).build())
    put(kinds.make_batch_job(NS, f"job-{suffix}", queue=q))
    put(kinds.make_jobset(NS, f"js-{suffix}", queue=q, jobs={"w": (1, 1)}))
    put(kinds.make_pytorchjob(NS, f"pt-{suffix}", queue=q, workers=0))
    put(kinds.make_trainjob(NS, f"tj-{suffix}", queue=q, runtime=RUNTIME))
    wrapped = kinds.make_batch_job(NS, f"aw-{suffix}-j")
    put(kinds.make_appwrapper(NS, f"aw-{suffix}", queue=q, job=wrapped))
    put(kinds.make_leaderworkerset(NS, f"lws-{suffix}", queue=q, size=1, leader_template=False))
    put(kinds.make_statefulset(NS, f"sts-{suffix}", queue=q))
    put(kinds.make_deployment(NS, f"dep-{suffix}", queue=q))
    put(kinds.make_notebook(NS, f"nb-{suffix}", queue=q))
    put(kinds.make_plain_pod(NS, f"pod-{suffix}", queue=q))


KINDS_RUN = 11  # the kinds submit_one_of_each makes


class Cluster:
    def __init__(self) -> None:
        self.server = KubeServer(clock=lambda: T0).start()
        store = self.server.store
        store.put(make_resource_flavor().build())
        store.put(make_cluster_queue().quota(gpus=200, cpu=2000).build())
        store.put(make_local_queue(NS).build())
        store.put(kinds.make_training_runtime(RUNTIME, gpus=1))
        self.emulator = ClusterEmulator(self.server, clock=lambda: T0, namespaces={NS})
        self.rounds = 0

    def submit(self, count: int) -> None:
        for _ in range(count):
            self.rounds += 1
            submit_one_of_each(self.server, str(self.rounds))
        self.emulator.sync()

    def client(self) -> KubeClient:
        return KubeClient(api_client_for(self.server.configuration()), timeout=timedelta(seconds=5))

    def requests(self) -> list[str]:
        """The non-watch requests since the log was cleared, as `METHOD path`."""
        return sorted(f"{r.method} {r.path}" for r in self.server.requests.all() if not r.is_watch)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    made = Cluster()
    yield made
    made.server.close()


def with_pods(found: list[WorkloadInfo]) -> int:
    return sum(1 for w in found if w.owner is not None and w.gpu_pods)


def test_without_caches_a_cycle_lists_the_same_calls_for_1_or_many_workloads_of_every_kind(
    cluster: Cluster,
) -> None:
    reader = KueueCluster(client=cluster.client(), settings=ALL_KINDS)
    reader.workload_resource()
    cluster.submit(1)
    cluster.server.requests.clear()
    assert with_pods(reader.list_workloads()) == KINDS_RUN
    one = cluster.requests()

    cluster.submit(4)
    cluster.server.requests.clear()
    assert with_pods(reader.list_workloads()) == 5 * KINDS_RUN
    many = cluster.requests()

    assert many == one
    assert all(r.startswith("GET ") for r in many)
    # Every resource is listed once: pods, Jobs, JobSets and StatefulSets, listed to find pods
    # or follow chains, serve again as the owners of the Workloads they own (they were listed
    # twice before: this count changed on purpose).
    assert [r for r in many if r.endswith("/pods")] == ["GET /api/v1/pods"]
    assert len(many) == len(set(many)), many
    assert len(set(many)) <= len(KNOWN_OWNERS) + 4 + 4  # kinds, intermediates, the rest


def test_with_caches_a_cycle_makes_no_request_for_1_or_many_workloads_of_every_kind(
    cluster: Cluster,
) -> None:
    reader = CachedKueueCluster(client=cluster.client(), settings=ALL_KINDS, cache=CACHE)
    try:
        reader.start()
        assert reader.wait_synced(timedelta(seconds=10))
        cluster.submit(1)
        _until(lambda: with_pods(reader.list_workloads()) == KINDS_RUN)
        cluster.server.requests.clear()
        reader.list_workloads()
        assert cluster.requests() == []

        cluster.submit(4)
        _until(lambda: with_pods(reader.list_workloads()) == 5 * KINDS_RUN)
        cluster.server.requests.clear()
        reader.list_workloads()
        assert cluster.requests() == []
    finally:
        reader.stop(timedelta(seconds=5))


def _until(condition: Callable[[], bool], within: float = 15) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "the caches never caught up"
        time.sleep(0.1)


def test_a_configured_pod_selector_wins_over_ownership(cluster: Cluster) -> None:
    """A JobSet's pods by the label its controller puts on them, as configured: a GPU pod
    carrying that label but owned by nothing counts too; by ownership it does not."""
    cluster.submit(1)
    stray = make_pod(NS, "stray").gpus(1).running(since=T0).build()
    stray["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] = "js-1"
    cluster.server.store.put(stray)
    selector = "jobset.sigs.k8s.io/jobset-name={name}"
    overridden = ALL_KINDS.model_copy(
        update={
            "owner_kinds": {
                **ALL_KINDS.owner_kinds,
                "JobSet": OwnerKindSettings(enabled=True, pod_selector=selector),
            }
        }
    )

    def pods_of_jobset(settings: ClusterSettings) -> list[str]:
        found = KueueCluster(client=cluster.client(), settings=settings).list_workloads()
        [jobset] = [w for w in found if w.owner is not None and w.owner.kind == "JobSet"]
        return sorted(p.name for p in jobset.pods)

    by_ownership = pods_of_jobset(ALL_KINDS)
    assert "stray" not in by_ownership and len(by_ownership) == 1
    assert pods_of_jobset(overridden) == sorted([*by_ownership, "stray"])


@pytest.mark.parametrize("status", [403, 404])
def test_an_unreadable_intermediate_kind_makes_its_workloads_unknown_never_idle(
    cluster: Cluster, status: int
) -> None:
    """Jobs refused (403) or not served (404): a JobSet's pods cannot be reached. Refused, its
    Workload is unknown with the reason; not served, no pod leads through Jobs at all (none
    created): never idle either way. (Only a JobSet here: a batch Job's Workload would need
    its owner kind listed.)"""
    store = cluster.server.store
    store.put(kinds.make_jobset(NS, "js", queue="user-queue", jobs={"w": (1, 1)}))
    cluster.emulator.sync()
    cluster.server.faults.fail_next("GET", "/apis/batch/v1/jobs", status=status, times=100)
    found = KueueCluster(client=cluster.client(), settings=ALL_KINDS).list_workloads()
    [jobset] = [w for w in found if w.owner is not None and w.owner.kind == "JobSet"]
    assert jobset.pods == ()
    rules = UsageRules(0.05, timedelta(minutes=10), timedelta(minutes=1), 0.5, timedelta(minutes=3))
    judged = judge_start(jobset, rules=rules, now=T0 + timedelta(minutes=1))
    assert judged is not None and judged.state is not State.IDLE
    if status == 403:
        assert judged.state is State.UNKNOWN
        assert "but Jobs unreadable: list jobs.batch: 403" in judged.reason, judged.reason
        assert judged.reason.endswith("never stopped")


def _cpu_side(cluster: Cluster) -> None:
    """Kinds with pods of no GPU beside their GPU ones, as users run them: a PyTorchJob's
    CPU master, a LeaderWorkerSet's CPU leader, a pod group's CPU member."""
    put, q = cluster.server.store.put, "user-queue"
    torch = kinds.make_pytorchjob(NS, "pt-cpu-master", queue=q, workers=1)
    torch["spec"]["pytorchReplicaSpecs"]["Master"]["template"] = pod_template("pytorch", gpus=0)
    put(torch)
    lws = kinds.make_leaderworkerset(NS, "lws-cpu-leader", queue=q, size=2)
    lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"] = pod_template("leader", gpus=0)
    put(lws)
    put(kinds.make_plain_pod(NS, "grp-gpu", queue=q, group="grp", group_size=2))
    put(kinds.make_plain_pod(NS, "grp-cpu", queue=q, gpus=0, group="grp", group_size=2))
    cluster.emulator.sync()
    cluster.emulator.sync()


def _pods_by_workload(found: list[WorkloadInfo]) -> dict[str, list[str]]:
    return {w.ref.name: sorted(p.name for p in w.pods) for w in found if w.owner is not None}


def test_caches_on_and_off_find_the_same_pods_cpu_only_ones_included(cluster: Cluster) -> None:
    """Both readers keep pods by one rule: the watch cache drops no pod the uncached reader
    counts (a CPU master dropped left its PyTorchJob short of its admitted pods: unknown for
    good, with caches on only)."""
    cluster.submit(1)
    _cpu_side(cluster)
    uncached = _pods_by_workload(
        KueueCluster(client=cluster.client(), settings=ALL_KINDS).list_workloads()
    )
    torch = next(pods for name, pods in uncached.items() if "pt-cpu-master" in name)
    assert torch == ["pt-cpu-master-master-0", "pt-cpu-master-worker-0"]
    assert sum(len(pods) for pods in uncached.values()) > KINDS_RUN + 4
    reader = CachedKueueCluster(client=cluster.client(), settings=ALL_KINDS, cache=CACHE)
    try:
        reader.start()
        assert reader.wait_synced(timedelta(seconds=10))
        cached: dict[str, list[str]] = {}

        def caught_up() -> bool:
            cached.clear()
            cached.update(_pods_by_workload(reader.list_workloads()))
            return cached == uncached

        with contextlib.suppress(AssertionError):
            _until(caught_up, within=5)
        assert cached == uncached
    finally:
        reader.stop(timedelta(seconds=5))
