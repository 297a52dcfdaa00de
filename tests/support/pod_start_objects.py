"""A namespace of admitted RayClusters whose GPU pods do not run, each as Kubernetes and
Kueue write it, for the adapters' tests of what the not-running class is read from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.support.builders import (
    make_pod,
    make_raycluster,
    make_workload_for,
    scale_up_event,
)
from tests.support.kube_server import KubeServer

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BAD_IMAGE = "ghcr.io/x:v2"
NO_NODE = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."


def stuck_clusters(kube: KubeServer, namespace: str) -> None:
    """`pull`: its worker's image cannot be pulled; `sched`: its worker is unschedulable, a
    scale-up was triggered for it; `crash`: its worker crash-loops in phase Running; `kueue`:
    waitForPodsReady on (PodsReady False/WaitForStart), reactivated 10 minutes after
    admission, a ProvisioningRequest check pending."""
    for name in ("pull", "sched", "crash", "kueue"):
        rc = make_raycluster(namespace, name).gpu_worker(replicas=1, gpus=1).build()
        workload = make_workload_for(rc).queue("user-queue").admitted(at=T0)
        if name == "kueue":
            workload = (
                workload.condition(
                    "PodsReady",
                    at=T0,
                    status=False,
                    reason="WaitForStart",
                    message="Not all pods are ready or succeeded",
                )
                .condition(
                    "Requeued",
                    at=T0 + timedelta(minutes=10),
                    reason="Reactivated",
                    message="The workload was reactivated",
                )
                .admission_check("prov", state="Pending", at=T0)
            )
        kube.store.put(rc)
        kube.store.put(workload.build())
        kube.store.put(make_pod(namespace, f"{name}-head").owned_by_raycluster(rc).build())
        worker = make_pod(namespace, f"{name}-worker-0").owned_by_raycluster(rc).gpus(1)
        if name == "pull":
            worker = worker.image(BAD_IMAGE).image_pull_failing(since=T0)
        elif name == "sched":
            worker = worker.unschedulable(NO_NODE, since=T0)
        elif name == "crash":
            worker = worker.waiting("CrashLoopBackOff", since=T0, phase="Running")
        else:
            worker = worker.phase("Pending")
        built = worker.build()
        kube.store.put(built)
        if name == "sched":
            kube.store.put(scale_up_event(built, at=T0 + timedelta(minutes=2)))
