"""What a cycle reads beside Workloads and pods, over the test API server, with watch caches
off and on: the ClusterQueue of a Workload Kueue has not admitted (pending, or evicted by a
preemption, which clears `status.admission`) through its LocalQueue; and an owner kind the
service may not list (403) makes the Workloads of that kind unknown, with the reason, while
every other Workload is read as usual and the cycle does not fail.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator
from datetime import timedelta

import pytest

from autoscaler.adapters.kueue.cached import CachedKueueCluster
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.domain.models import State, WorkloadInfo
from autoscaler.settings.ha import WatchCacheSettings
from tests.adapters.test_kind_discovery import ALL_KINDS, NS, Cluster
from tests.support.builders import kinds, make_raycluster, make_workload_for
from tests.support.builders.queues import make_cluster_queue, make_local_queue

# Short: a refused cache never fills, and the cycle waits this long for it once.
CACHE = WatchCacheSettings.model_validate({"watchTimeout": "2s", "syncTimeout": "1s"})


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    made = Cluster()
    yield made
    made.server.close()


Reading = Callable[[Collection[str]], list[WorkloadInfo]]


@pytest.fixture(params=["uncached", "cached"])
def read(request: pytest.FixtureRequest, cluster: Cluster) -> Iterator[Reading]:
    """A cycle's read, by a reader made now (after the test's objects and refusals are in
    place): the cached one once its caches hold the Workloads of the owners named."""
    readers: list[CachedKueueCluster] = []

    def cycle(owners: Collection[str]) -> list[WorkloadInfo]:
        client = cluster.client()
        if request.param == "uncached":
            return KueueCluster(client=client, settings=ALL_KINDS).list_workloads()
        cached = CachedKueueCluster(client=client, settings=ALL_KINDS, cache=CACHE)
        readers.append(cached)
        cached.start()
        deadline = time.monotonic() + 15
        while True:
            found = cached.list_workloads()
            named = {w.owner.name for w in found if w.owner is not None}
            if set(owners) <= named:
                return found
            assert time.monotonic() < deadline, "the caches never caught up"
            time.sleep(0.1)

    yield cycle
    for cached in readers:
        cached.stop(timedelta(seconds=5))


def by_name(found: list[WorkloadInfo], owner: str) -> WorkloadInfo:
    [workload] = [w for w in found if w.owner is not None and w.owner.name == owner]
    return workload


def pending_raycluster(cluster: Cluster, name: str, *, queue: str) -> None:
    """A RayCluster's Workload as Kueue creates it, not admitted: no status.admission."""
    raycluster = make_raycluster(NS, name).head(gpus=1).queue(queue).build()
    cluster.server.store.put(raycluster)
    cluster.server.store.put(make_workload_for(raycluster).build())


def test_a_workload_not_admitted_has_its_local_queues_cluster_queue(
    cluster: Cluster, read: Reading
) -> None:
    store = cluster.server.store
    store.put(make_cluster_queue("other-cq").cohort("pool").quota(gpus=1, cpu=1).build())
    store.put(make_local_queue(NS, "other-queue").cluster_queue("other-cq").build())
    pending_raycluster(cluster, "waiting", queue="other-queue")
    pending_raycluster(cluster, "nowhere", queue="no-such-queue")

    found = read(["waiting", "nowhere"])

    waiting = by_name(found, "waiting")
    assert not waiting.admitted
    assert (waiting.cluster_queue, waiting.cohort) == ("other-cq", "pool")
    assert by_name(found, "nowhere").cluster_queue is None


def test_local_queues_refused_leave_the_cluster_queue_unknown_not_the_cycle_failed(
    cluster: Cluster,
) -> None:
    pending_raycluster(cluster, "waiting", queue="user-queue")
    cluster.server.faults.fail_next(
        "GET", "/apis/kueue.x-k8s.io/v1beta2/localqueues", status=403, times=100
    )
    found = KueueCluster(client=cluster.client(), settings=ALL_KINDS).list_workloads()
    assert by_name(found, "waiting").cluster_queue is None


def test_a_refused_owner_kind_makes_its_workloads_unknown_and_only_those(
    cluster: Cluster, read: Reading
) -> None:
    """Jobs refused: a batch Job's Workload is unknown, with the API server's answer (its
    owner's exemption or labels cannot be read); the JobSet's, whose pods lead through Jobs,
    is unsure as before; a RayCluster's is read as usual."""
    store = cluster.server.store
    raycluster = make_raycluster(NS, "rc").head(gpus=1).queue("user-queue").build()
    store.put(raycluster)
    store.put(make_workload_for(raycluster).build())
    store.put(kinds.make_batch_job(NS, "job", queue="user-queue"))
    store.put(kinds.make_jobset(NS, "js", queue="user-queue", jobs={"w": (1, 1)}))
    cluster.emulator.sync()
    cluster.server.faults.fail_next("GET", "/apis/batch/v1/jobs", status=403, times=1000)

    found = read(["job", "js", "rc"])

    job = by_name(found, "job")
    assert job.hands_off is not None and job.hands_off.state is State.UNKNOWN
    assert job.hands_off.reason.startswith("its Job job cannot be read: "), job.hands_off
    assert "403" in job.hands_off.reason or "refused" in job.hands_off.reason, job.hands_off
    assert by_name(found, "js").hands_off is None
    rc = by_name(found, "rc")
    assert rc.hands_off is None and rc.gpu_pods
