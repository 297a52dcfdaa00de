"""Seeding the test API server with Kueue queues and RayClusters whose GPUs a live exporter
reports, for tests that drive the real service over real protocols (tests/e2e, tests/faults).

    seed_queues(server, cluster_queue="cq-x", namespaces=["ns"], gpus=100)
    submit(server, make_raycluster("ns", "rc").head(gpus=1).queue("user-queue").build())
    ClusterEmulator(server, clock=BackdatedClock().now, namespaces=["ns"]).sync()
    for gpu in gpus_of(server, "ns", "rc"):
        exporter.set(gpu, utilization=0)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from autoscaler.domain.models import Snapshot
from tests.support.builders import (
    make_cluster_queue,
    make_local_queue,
    make_resource_flavor,
    make_workload_for,
)
from tests.support.kube_server import KubeServer
from tests.support.prom import Gpu

RAYCLUSTERS = "rayclusters.ray.io"
WORKLOADS = "workloads.kueue.x-k8s.io"


class BackdatedClock:
    """Kueue's clock for the first admissions: as if they happened `offset` ago, so those
    workloads are past their grace period while Prometheus data is live."""

    def __init__(self, offset: timedelta = timedelta(minutes=1)) -> None:
        self.offset = offset

    def now(self) -> datetime:
        return datetime.now(UTC) - self.offset


def seed_queues(
    server: KubeServer,
    *,
    cluster_queue: str,
    namespaces: Iterable[str],
    gpus: int,
    local_queue: str = "user-queue",
) -> None:
    """A ClusterQueue of `gpus` GPUs and a LocalQueue `local_queue` onto it in each namespace."""
    store = server.store
    store.put(make_resource_flavor().build())
    store.put(make_cluster_queue(cluster_queue).quota(gpus=gpus, cpu=10 * gpus + 100).build())
    for namespace in namespaces:
        store.put(make_local_queue(namespace, local_queue).cluster_queue(cluster_queue).build())


def submit(server: KubeServer, raycluster: dict[str, Any]) -> None:
    """Apply a RayCluster; Kueue's webhook makes its Workload at once."""
    server.store.put(raycluster)
    server.store.put(make_workload_for(raycluster).build())


def annotate_raycluster(server: KubeServer, namespace: str, name: str, **values: str) -> None:
    """Merge annotations into a RayCluster, as `kubectl annotate` would."""
    server.store.patch(
        RAYCLUSTERS, name=name, namespace=namespace, patch={"metadata": {"annotations": values}}
    )


def workload_of(server: KubeServer, namespace: str, raycluster: str) -> dict[str, Any]:
    """The Workload a RayCluster owns."""
    found = [
        w
        for w in server.store.list(WORKLOADS, namespace=namespace)
        if w["metadata"]["ownerReferences"][0]["name"] == raycluster
    ]
    assert len(found) == 1, f"{len(found)} Workloads owned by {namespace}/{raycluster}"
    return found[0]


def gpus_of(server: KubeServer, namespace: str, raycluster: str) -> list[Gpu]:
    """The GPUs the RayCluster's pods hold, as the exporter labels them (one node per pod)."""
    pods = server.store.list(
        "pods", namespace=namespace, label_selector=f"ray.io/cluster={raycluster}"
    )
    gpus = []
    for pod in pods:
        count = sum(
            int(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0))
            for c in pod["spec"]["containers"]
        )
        name = pod["metadata"]["name"]
        node = f"node-{namespace}-{name}"  # distinct GPU UUIDs across the session's namespaces
        gpus += [Gpu(namespace=namespace, pod=name, node=node, index=i) for i in range(count)]
    return gpus


def cycle_until(
    cycle: Callable[[], Snapshot], condition: Callable[[Snapshot], bool], *, timeout_s: float = 40
) -> Snapshot:
    """Run cycles (live metrics: half a second apart) until `condition` holds; the last
    decisions are the failure message when it never does."""
    deadline = time.monotonic() + timeout_s
    while True:
        snapshot = cycle()
        if condition(snapshot):
            return snapshot
        assert time.monotonic() < deadline, f"timed out; last decisions: {describe(snapshot)}"
        time.sleep(0.5)


def describe(snapshot: Snapshot) -> list[str]:
    return [
        f"{r.ref}: {r.decision.state} {r.decision.action} {r.decision.reason}"
        for r in snapshot.workloads
    ]
