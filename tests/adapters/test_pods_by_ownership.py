"""Pods found by ownership or by Kueue's pod group, over the test API server: the owner,
its intermediate objects and pods built as their controllers write them (ownerReferences
with `controller: true`; Kueue's pod-group label), never through an emulation."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.domain.models import WorkloadInfo
from autoscaler.settings.tree import ClusterSettings, OwnerKindSettings
from tests.support.builders import make_pod, make_workload
from tests.support.kube_server import KubeServer

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
KINDS = ("JobSet", "Deployment", "StatefulSet")
SETTINGS = ClusterSettings(
    service_namespace="iga",
    runtime_state_config_map="iga-state",
    owner_kinds={
        **ClusterSettings().owner_kinds,
        **{kind: OwnerKindSettings(enabled=True) for kind in KINDS},
    },
)


def obj(
    api_version: str, kind: str, namespace: str, name: str, owner: Any = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"{kind}-{name}-uid"}
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": {}}


def gpu_pod(namespace: str, name: str, owner: Any = None, group: str = "") -> dict[str, Any]:
    pod = make_pod(namespace, name).gpus(1).running(since=T0).build()
    if owner is not None:
        pod["metadata"]["ownerReferences"] = obj("v1", "Pod", namespace, "x", owner)["metadata"][
            "ownerReferences"
        ]
    if group:
        pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] = group
    return pod


@pytest.fixture
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        yield running


def connect(server: KubeServer) -> KueueCluster:
    client = KubeClient(api_client_for(server.configuration()), timeout=timedelta(seconds=5))
    return KueueCluster(client=client, settings=SETTINGS)


def jobset(server: KubeServer, namespace: str, name: str, *, job_missing: bool = False) -> None:
    js = obj("jobset.x-k8s.io/v1alpha2", "JobSet", namespace, name)
    job = obj("batch/v1", "Job", namespace, f"{name}-w-0", js)
    server.store.put(js)
    if not job_missing:
        server.store.put(job)
    server.store.put(gpu_pod(namespace, f"{name}-w-0-0", job))
    server.store.put(
        make_workload(namespace, f"jobset-{name}").owned_by(js).pod_set("w").admitted(at=T0).build()
    )


def notebook_like_deployment(server: KubeServer, namespace: str, name: str) -> None:
    """A Deployment whose pod Kueue's pod integration queues alone: the Workload is owned
    by the pod (kueue pkg/controller/jobs/deployment, jobs/pod)."""
    deployment = obj("apps/v1", "Deployment", namespace, name)
    replicas = obj("apps/v1", "ReplicaSet", namespace, f"{name}-7f", deployment)
    pod = gpu_pod(namespace, f"{name}-7f-abc", replicas)
    server.store.put(deployment)
    server.store.put(replicas)
    server.store.put(pod)
    server.store.put(
        make_workload(namespace, f"pod-{name}")
        .owned_by(pod)
        .pod_set("main")
        .admitted(at=T0)
        .build()
    )


def statefulset_group(server: KubeServer, namespace: str, name: str) -> None:
    """Kueue v0.20's StatefulSet Workload: owned by the set and each pod, none controller,
    job-owner annotations; the pods labelled with the Workload's name."""
    sts = obj("apps/v1", "StatefulSet", namespace, name)
    workload_name = f"statefulset-{name}"
    pods = [gpu_pod(namespace, f"{name}-{i}", sts, group=workload_name) for i in range(2)]
    for item in (sts, *pods):
        server.store.put(item)
    workload = (
        make_workload(namespace, workload_name).pod_set("main", count=2).admitted(at=T0).build()
    )
    refs = [
        {
            "apiVersion": o["apiVersion"],
            "kind": o["kind"],
            "name": o["metadata"]["name"],
            "uid": o["metadata"]["uid"],
        }
        for o in (sts, *pods)
    ]
    workload["metadata"]["ownerReferences"] = refs
    workload["metadata"].setdefault("annotations", {}).update(
        {
            "kueue.x-k8s.io/job-owner-gvk": "apps/v1, Kind=StatefulSet",
            "kueue.x-k8s.io/job-owner-name": name,
        }
    )
    server.store.put(workload)


def by_owner(found: list[WorkloadInfo]) -> dict[str, WorkloadInfo]:
    return {f"{w.owner.kind} {w.ref.namespace}/{w.owner.name}": w for w in found if w.owner}


def test_each_kind_finds_its_pods_and_a_broken_chain_is_unsure(server: KubeServer) -> None:
    jobset(server, "team-a", "train")
    jobset(server, "team-b", "lost", job_missing=True)
    notebook_like_deployment(server, "team-a", "serve")
    statefulset_group(server, "team-a", "db")

    found = by_owner(connect(server).list_workloads())

    assert {k: sorted(p.name for p in w.pods) for k, w in found.items()} == {
        "JobSet team-a/train": ["train-w-0-0"],
        "JobSet team-b/lost": [],
        "Deployment team-a/serve": ["serve-7f-abc"],
        "StatefulSet team-a/db": ["db-0", "db-1"],
    }
    lost = found["JobSet team-b/lost"].admission
    assert "Job lost-w-0 was not found" in str(lost)


def test_pod_discovery_is_constant_whatever_the_number_of_workloads(server: KubeServer) -> None:
    jobset(server, "team-c", "one")
    notebook_like_deployment(server, "team-c", "web-one")
    cluster = connect(server)
    cluster.workload_resource()
    server.requests.clear()
    cluster.list_workloads()
    few = sorted(r.path for r in server.requests.all())
    for i in range(10):
        jobset(server, "team-c", f"many-{i}")
        notebook_like_deployment(server, "team-c", f"web-{i}")
    server.requests.clear()
    cluster.list_workloads()
    many = sorted(r.path for r in server.requests.all())

    assert many == few
    assert [p for p in many if p.endswith("/pods")] == ["/api/v1/pods"]
