"""What the KubeRay adapter tests share: a client of the test API server, an emptied store,
RayClusters with their pods put in it, and a fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from tests.support.builders import RayClusterBuilder, make_pod, timestamp
from tests.support.kube_server import KubeServer

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NOW = T0 + timedelta(hours=2)
STORED_KINDS = (
    "workloads.kueue.x-k8s.io",
    "rayclusters.ray.io",
    "rayjobs.ray.io",
    "pods",
    "events",
    "namespaces",
)


class FixedClock:
    def now(self) -> datetime:
        return NOW


def client_of(server: KubeServer) -> KubeClient:
    return KubeClient(api_client_for(server.configuration()), timeout=timedelta(seconds=5))


def emptied(server: KubeServer) -> KubeServer:
    """The server with none of the kinds these tests store, and no request logged yet."""
    for kind in STORED_KINDS:
        for obj in server.store.list(kind):
            meta = obj["metadata"]
            server.store.delete(kind, name=meta["name"], namespace=meta.get("namespace"))
    server.requests.clear()
    server.faults.clear()
    return server


def ray_pods(
    raycluster: dict[str, Any], *, workers: int, gpus: int = 1, since: datetime = T0
) -> list[dict[str, Any]]:
    """The head (no GPU) and `workers` GPU workers of `raycluster`, Running since `since`."""
    namespace, name = raycluster["metadata"]["namespace"], raycluster["metadata"]["name"]
    built = [make_pod(namespace, f"{name}-head").owned_by_raycluster(raycluster)]
    built += [
        make_pod(namespace, f"{name}-worker-{i}").owned_by_raycluster(raycluster).gpus(gpus)
        for i in range(workers)
    ]
    pods = [pod.running(since=since).build() for pod in built]
    for pod in pods:
        pod["metadata"]["creationTimestamp"] = timestamp(since)
    return pods


def put_raycluster(
    server: KubeServer, builder: RayClusterBuilder, *, workers: int = 2, running: bool = True
) -> dict[str, Any]:
    """The RayCluster (with `workers` one-GPU workers) and, when `running`, its pods."""
    raycluster = server.store.put(builder.gpu_worker(replicas=workers, gpus=1).build())
    for pod in ray_pods(raycluster, workers=workers) if running else []:
        server.store.put(pod)
    return raycluster
