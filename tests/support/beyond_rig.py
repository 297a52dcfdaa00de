"""The real `serve` process with the suspend actuators on (ISSUE 17), for tests/e2e: one
namespace of its own holding every kind of RayCluster the service must tell apart, all idle
on the live exporter (GPUs at 0%), with seconds-long windows and no warning before a stop.

    with BeyondRig.running(kube_server, live_metrics, files=tmp) as rig:
        rig.wait_until(lambda: rig.suspended("plain"), what="plain suspended")
        rig.service_writes("rayclusters/plain")

Kueue (tests/support/cluster_emulator.py) admits the Workloads once, at seeding; KubeRay
(tests/support/kuberay_emulator.py) runs the pods of every RayCluster no Workload references
and follows `spec.suspend` as it changes. Only the service speaks HTTP to the test API server
in `namespace` (the rest is seeded straight into its store), so its request log is the
service's writes.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

from tests.conftest import LiveMetrics
from tests.support.builders import make_raycluster, make_rayjob, make_workload_for
from tests.support.cluster_emulator import ClusterEmulator
from tests.support.kube_server import ApiError, KubeServer, RecordedRequest
from tests.support.kuberay_emulator import KubeRayEmulator
from tests.support.prom import Gpu, free_port
from tests.support.seeding import BackdatedClock, gpus_of, seed_queues
from tests.support.serve_process import ServeProcess, write_config, write_kubeconfig

T = TypeVar("T")
Object = dict[str, Any]
PERSON = "beyond-person"  # a bearer token: may patch the namespace's RayClusters, read its rows
PROTECTED_CLASS = "inference"
CYCLE = re.compile(r"^cycle (\d+):")
RAYCLUSTERS = "rayclusters.ray.io"
WORKLOADS = "workloads.kueue.x-k8s.io"
USER_KEY, USER_VALUE = "team.example.com/owner", "vision"  # someone else's: must survive


def rayclusters(namespace: str) -> list[Object]:
    """Every RayCluster of the story, as its users applied them (RayJob's aside)."""

    def idle(name: str) -> Any:
        return make_raycluster(namespace, name).head(gpus=1)

    return [
        idle("plain").annotation(USER_KEY, USER_VALUE).build(),
        idle("plain-false").suspended(False).build(),
        idle("kai").kai_queue("team-a").kai_priority("train").build(),
        idle("unlabelled").build(),  # Kueue admits it without the label: see seed()
        idle("queued").queue("user-queue").build(),  # Kueue's label, no Workload yet
        idle("stopped-elsewhere").suspended().build(),
        idle("shared").kai_queue("team-a").gpu_fraction("0.5").build(),
        idle("inference").kai_queue("team-a").kai_priority(PROTECTED_CLASS).build(),
    ]


def config(*, namespace: str, kubeconfig: Path, prometheus: str, api_port: int) -> Object:
    """Seconds-long windows, acting at once (no warning), both suspend actuators and RayJob
    handling on; as a config file says it. The grace period outlasts a test's steps after a
    reactivation, and the seeded pods started a minute ago, past it."""
    owner_kinds = {
        "RayCluster": {"enabled": True, "podSelector": "ray.io/cluster={name}"},
        "RayJob": {"enabled": True},  # its pods through its RayCluster, as KubeRay owns them
        "Job": {"enabled": False, "podSelector": "batch.kubernetes.io/job-name={name}"},
    }
    return {
        "prometheus": {"url": prometheus, "timeout": "1s"},
        "cluster": {
            "kubeconfig": str(kubeconfig),
            "serviceNamespace": f"{namespace}-svc",
            "ownerKinds": owner_kinds,
        },
        "actuators": {"kai": {"enabled": True}, "kuberay": {"enabled": True}},
        "policy": {
            "thresholdPercent": 5,
            "idleWindow": "4s",
            "gracePeriod": "30s",
            "minCoverage": 0.5,
            "slot": "1s",
            "staleAfter": "5s",
            "idleSinceLookback": "5m",
            "dryRun": False,
            "warnBefore": "0s",
            "namespaces": {"include": [namespace]},
            "protectedPriorityClasses": [PROTECTED_CLASS],
            "maxDeactivationsPerCycle": 10,
        },
        "guards": {"breaker": {"minWorkloads": 100}},
        "loop": {"interval": "1s"},
        "watchCache": {"watchTimeout": "1s"},
        "api": {"host": "127.0.0.1", "port": api_port},
        "logging": {"format": "json"},
    }


def poll(probe: Callable[[], T | None], *, within: float, what: str) -> T:
    """`probe()` once it answers something truthy; fails after `within` seconds."""
    deadline = time.monotonic() + within
    while not (found := probe()):
        assert time.monotonic() < deadline, f"not within {within}s: {what}"
        time.sleep(0.1)
    return found


def wait_for(condition: Callable[[], bool], *, within: float) -> bool:
    """Whether `condition()` came true within `within` seconds. A test asserts on what it
    sees afterwards, so one object the service mishandled fails its own test, not all."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


@dataclass
class BeyondRig:
    server: KubeServer
    namespace: str
    api: str
    serve: ServeProcess
    kubeconfig: Path
    job_cluster: str  # the name of the RayCluster KubeRay made for the RayJob `job`

    def raycluster(self, name: str) -> Object:
        return self.server.store.get(RAYCLUSTERS, name=name, namespace=self.namespace)

    def suspended(self, name: str) -> bool:
        return self.raycluster(name)["spec"].get("suspend") is True

    def workload_of(self, owner: str) -> Object:
        [found] = [
            w
            for w in self.server.store.list(WORKLOADS, namespace=self.namespace)
            if w["metadata"]["ownerReferences"][0]["name"] == owner
        ]
        return found

    def deactivated(self, owner: str) -> bool:
        return self.workload_of(owner)["spec"].get("active", True) is False

    def service_writes(self, resource_path: str) -> list[RecordedRequest]:
        """What the service asked to change on one object, e.g. `rayclusters/plain` (its
        namespace's path under any API group), in order."""
        suffix = f"/namespaces/{self.namespace}/{resource_path}"
        return [
            r
            for r in self.server.requests.writes()
            if r.token == f"serve-{self.namespace}" and r.path.endswith(suffix)
        ]

    def cycles(self) -> int:
        numbers = [int(m[1]) for m in map(CYCLE.match, self.serve.messages()) if m]
        return max(numbers, default=0)

    def rows(self) -> list[Object]:
        """The latest snapshot's rows of the namespace, through REST."""
        answer = httpx.get(
            f"{self.api}/api/v1/workloads",
            params={"namespace": self.namespace},
            headers={"Authorization": f"Bearer {PERSON}"},
            timeout=5,
        )
        assert answer.status_code == 200, answer.text
        items: list[Object] = answer.json()["items"]
        return items

    def row(self, name: str, rows: list[Object] | None = None) -> Object | None:
        """The row of a RayCluster (its own, or its Workload's) or of a Workload's owner."""
        for item in self.rows() if rows is None else rows:
            owner = item.get("owner") or {}
            if name in (item["name"], owner.get("name")):
                return item
        return None

    def reactivate(self, name: str, *, reason: str) -> httpx.Response:
        return httpx.post(
            f"{self.api}/api/v1/workloads/{self.namespace}/{name}/reactivate",
            json={"reason": reason},
            headers={"Authorization": f"Bearer {PERSON}"},
            timeout=10,
        )

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """The real CLI as a person runs it, with the person's token."""
        command = [sys.executable, "-m", "autoscaler", *args, "--server", self.api]
        command += ["--token", PERSON, "-o", "json"]
        return subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)

    @classmethod
    @contextmanager
    def running(cls, server: KubeServer, live: LiveMetrics, *, files: Path) -> Iterator[BeyondRig]:
        namespace = f"beyond-{uuid.uuid4().hex[:6]}"
        allow_person(server, namespace)
        with ExitStack() as stack:
            api_port = free_port()
            kubeconfig = write_kubeconfig(files / "kubeconfig", server, token=f"serve-{namespace}")
            settings = config(
                namespace=namespace,
                kubeconfig=kubeconfig,
                prometheus=live.prometheus.url,
                api_port=api_port,
            )
            gpus: list[Gpu] = []
            stack.callback(_clean_up, server, live, namespace, gpus)
            job_cluster = seed(server, namespace)
            kuberay = KubeRayEmulator(server, clock=BackdatedClock().now, namespaces=[namespace])
            stack.callback(kuberay.close)
            kuberay.sync()
            gpus += idle_gpus(server, live, namespace)
            serve = ServeProcess(write_config(files / "config.yaml", settings), log=files / "log")
            with serve:
                api = f"http://127.0.0.1:{api_port}"
                yield cls(server, namespace, api, serve, kubeconfig, job_cluster)


def allow_person(server: KubeServer, namespace: str) -> None:
    server.reviews.add_token(PERSON, username=PERSON)
    server.reviews.allow(
        user=PERSON, verb="patch", group="ray.io", resource="rayclusters", namespace=namespace
    )
    server.reviews.allow(
        user=PERSON, verb="list", group="kueue.x-k8s.io", resource="workloads", namespace=namespace
    )


def seed(server: KubeServer, namespace: str) -> str:
    """The namespace, Kueue's queues, the RayClusters, the RayJob with its Workload and
    RayCluster; Kueue admits its Workloads (and starts the unlabelled cluster's pods). The
    name of the RayJob's RayCluster."""
    store = server.store
    store.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    seed_queues(server, cluster_queue=f"cq-{namespace}", namespaces=[namespace], gpus=8)
    clusters = rayclusters(namespace)
    for obj in clusters:
        store.put(obj)
    # manageJobsWithoutQueueName (or a LocalQueue's defaulting): Kueue's Workload names the
    # queue, the RayCluster carries no Kueue label at all.
    [unlabelled] = [c for c in clusters if c["metadata"]["name"] == "unlabelled"]
    store.put(make_workload_for(unlabelled).queue("user-queue").build())
    job = make_rayjob(namespace, "job").head(gpus=1).gpu_worker(replicas=1).queue("user-queue")
    store.put(job.build())
    store.put(make_workload_for(job.build()).build())
    store.put(job.raycluster().build())
    ClusterEmulator(server, clock=BackdatedClock().now, namespaces=[namespace]).sync()
    return job.raycluster_name()


def idle_gpus(server: KubeServer, live: LiveMetrics, namespace: str) -> list[Gpu]:
    """Every GPU of the namespace's pods at 0%: the whole ones they request, and the one
    each fractional pod shares (it requests none, yet dcgm-exporter names it)."""
    gpus: list[Gpu] = []
    for obj in server.store.list(RAYCLUSTERS, namespace=namespace):
        gpus += gpus_of(server, namespace, obj["metadata"]["name"])
    shared = server.store.list("pods", namespace=namespace, label_selector="ray.io/cluster=shared")
    gpus += [
        Gpu(namespace=namespace, pod=p["metadata"]["name"], node=f"node-{namespace}-shared")
        for p in shared
    ]
    for gpu in gpus:
        live.exporter.set(gpu, utilization=0)
    return gpus


def _clean_up(server: KubeServer, live: LiveMetrics, namespace: str, gpus: list[Gpu]) -> None:
    for gpu in gpus:
        live.exporter.remove(gpu)
    for owned in (namespace, f"{namespace}-svc"):
        server.store.delete_namespace(owned)
    with suppress(ApiError):  # missing when seeding failed early
        server.store.delete("namespaces", name=namespace)
        server.store.delete("clusterqueues.kueue.x-k8s.io", name=f"cq-{namespace}")
