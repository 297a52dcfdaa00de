"""End to end, every owner kind Kueue queues, on real parts: the real Prometheus scraping a live
dcgm-exporter every second, the test Kubernetes API server with Kueue and each kind's
controller emulated (tests/support/kind_controllers.py, cluster_emulator.py), the real
adapters reading through watch caches, and the real reconcile pass.

One ClusterQueue holds exactly one idle and one busy workload of every kind in the table
(`domain/policy/owners.py`), every kind enabled in `cluster.ownerKinds`; then one waiter of
every kind queues behind them. The service deactivates each idle Workload (a merge patch whose
spec is `{"active": false}`), leaves each busy one alone, never writes an owner (beyond our
annotations where the kind is annotated; never a Job, StatefulSet or Deployment), a pod or an
intermediate object, and Kueue then
admits every waiter. Under Kueue's pod integration (Deployment, Notebook, plain Pod) the stop
is a requeue: the Deployment's and the Notebook's pods come back gated, as a new Workload that
queues behind the waiters, and the stop's Event says the workload yields its GPUs to the queue.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import kubernetes.client
import pytest

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.actuator import KueueActuator
from autoscaler.adapters.kueue.cached import CachedKueueCluster
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.core.clock import SystemClock
from autoscaler.domain.guards.breaker import BreakerRules
from autoscaler.domain.guards.screen import GuardRules
from autoscaler.domain.policy.owner_words import REQUEUE_WORDS
from autoscaler.domain.policy.owners import KNOWN_OWNERS
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings
from tests.conftest import LiveMetrics
from tests.support.builders import kinds, make_raycluster, make_rayjob, make_workload_for
from tests.support.cluster_emulator import ClusterEmulator
from tests.support.fakes import FakeAuditLog
from tests.support.kube_server import KubeServer
from tests.support.kube_server.faults import RecordedRequest
from tests.support.loop_builders import a_loop, a_screen
from tests.support.prom import Gpu
from tests.support.seeding import BackdatedClock, cycle_until, seed_queues

pytestmark = pytest.mark.slow

Object = dict[str, Any]
RUN = uuid.uuid4().hex[:6]
NS, QUEUE, CQ = f"kinds-{RUN}", "user-queue", f"cq-kinds-{RUN}"
RUNTIME = f"torch-{RUN}"
WORKLOADS = "workloads.kueue.x-k8s.io"
IDLE, BUSY, WAITING = "idle", "busy", "wait"


def _submit_raycluster(server: KubeServer, name: str) -> None:
    raycluster = make_raycluster(NS, name).head(gpus=1).queue(QUEUE).build()
    server.store.put(raycluster)
    server.store.put(make_workload_for(raycluster).build())  # Kueue's webhook, at once


def _submit_rayjob(server: KubeServer, name: str) -> None:
    rayjob = make_rayjob(NS, name).head(gpus=1).queue(QUEUE).build()
    server.store.put(rayjob)
    server.store.put(make_workload_for(rayjob).build())


def _applying(make: Callable[[str], Object]) -> Callable[[KubeServer, str], None]:
    return lambda server, name: server.store.put(make(name)) and None


def _kubeflow(kind: str, replica_type: str) -> Callable[[KubeServer, str], None]:
    """A Kubeflow training job of one `replica_type` pod; an MPIJob adds its launcher, which
    holds no GPU (its pod, made through the launcher Job, has no GPU series)."""
    replicas = {replica_type: 1} | ({"Launcher": 1} if kind == "MPIJob" else {})
    return _applying(lambda n: kinds.make_kubeflow_job(kind, NS, n, queue=QUEUE, replicas=replicas))


# Each kind of the table, as a user submits one of 1 GPU to the LocalQueue.
SUBMIT: dict[str, Callable[[KubeServer, str], None]] = {
    "RayCluster": _submit_raycluster,
    "RayJob": _submit_rayjob,
    "Job": _applying(lambda n: kinds.make_batch_job(NS, n, queue=QUEUE)),
    "JobSet": _applying(lambda n: kinds.make_jobset(NS, n, queue=QUEUE, jobs={"w": (1, 1)})),
    "PyTorchJob": _applying(lambda n: kinds.make_pytorchjob(NS, n, queue=QUEUE, workers=0)),
    "TFJob": _kubeflow("TFJob", "Chief"),
    "XGBoostJob": _kubeflow("XGBoostJob", "Master"),
    "PaddleJob": _kubeflow("PaddleJob", "Master"),
    "JAXJob": _kubeflow("JAXJob", "Worker"),
    "MPIJob": _kubeflow("MPIJob", "Worker"),
    "TrainJob": _applying(lambda n: kinds.make_trainjob(NS, n, queue=QUEUE, runtime=RUNTIME)),
    "AppWrapper": _applying(
        lambda n: kinds.make_appwrapper(NS, n, queue=QUEUE, job=kinds.make_batch_job(NS, f"{n}-j"))
    ),
    "LeaderWorkerSet": _applying(
        lambda n: kinds.make_leaderworkerset(NS, n, queue=QUEUE, size=1, leader_template=False)
    ),
    "StatefulSet": _applying(lambda n: kinds.make_statefulset(NS, n, queue=QUEUE)),
    "Deployment": _applying(lambda n: kinds.make_deployment(NS, n, queue=QUEUE)),
    "Notebook": _applying(lambda n: kinds.make_notebook(NS, n, queue=QUEUE)),
    "Pod": _applying(lambda n: kinds.make_plain_pod(NS, n, queue=QUEUE)),
}
REQUEUED = tuple(kind for kind in SUBMIT if not KNOWN_OWNERS[kind].stop_lasts)
SETTINGS = Settings.model_validate(
    {
        "policy": {
            "thresholdPercent": 5,
            "idleWindow": "4s",
            "gracePeriod": "1s",
            "minCoverage": 0.5,
            "slot": "1s",
            "staleAfter": "5s",
            "idleSinceLookback": "2h",
            "warnBefore": "0s",  # the stops come as soon as due: this story is about kinds
            "maxDeactivationsPerCycle": 50,
            "namespaces": {"include": [NS]},
            "dryRun": False,
        },
        "cluster": {
            "serviceNamespace": f"{NS}-svc",
            "ownerKinds": {kind: {"enabled": True} for kind in KNOWN_OWNERS},
        },
        "watchCache": {"watchTimeout": "2s", "syncTimeout": "10s"},
    }
)


def name_of(role: str, kind: str) -> str:
    return f"{role}-{kind.lower()}"


def belongs(pod_name: str, owner: str) -> bool:
    """Every kind's pods are named after their owner: `<owner>` or `<owner>-...`."""
    return pod_name == owner or pod_name.startswith(f"{owner}-")


@dataclass
class Rig:
    server: KubeServer
    live: LiveMetrics
    emulator: ClusterEmulator
    cycle_once: Callable[[], Any]
    metered: set[str]

    def sync(self) -> None:
        """Kueue and the controllers, then the exporter for each pod that now runs: idle ones
        at 0 %, the others at 85 %."""
        self.emulator.sync()
        for pod in self.server.store.list("pods", namespace=NS):
            name = pod["metadata"]["name"]
            if name in self.metered or (pod.get("status") or {}).get("phase") != "Running":
                continue
            self.metered.add(name)
            utilization = 0 if name.startswith(f"{IDLE}-") else 85
            for index in range(_gpus(pod)):
                gpu = Gpu(namespace=NS, pod=name, node=f"node-{NS}-{name}", index=index)
                self.live.exporter.set(gpu, utilization=utilization)

    def cycle(self) -> Any:
        snapshot = self.cycle_once()
        self.sync()
        return snapshot

    def workloads(self) -> list[Object]:
        return self.server.store.list(WORKLOADS, namespace=NS)

    def workload_of(self, kind: str, role: str) -> Object | None:
        """The Workload of this kind's owner; for a queued pod's kind, the one its pod owns."""
        owner = name_of(role, kind)
        queued_pod = KNOWN_OWNERS[kind].pods_found.name == "QUEUED_PODS"
        for workload in self.workloads():
            for ref in workload["metadata"].get("ownerReferences", []):
                if ref["kind"] == kind and ref["name"] == owner:
                    return workload
                if queued_pod and ref["kind"] == "Pod" and belongs(ref["name"], owner):
                    return workload
        return None


def _gpus(pod: Object) -> int:
    return sum(
        int(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0))
        for c in pod["spec"]["containers"]
    )


def admitted(workload: Object | None) -> bool:
    conditions = ((workload or {}).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions)


@pytest.fixture(scope="module")
def rig(kube_server: KubeServer, live_metrics: LiveMetrics) -> Iterator[Rig]:
    store = kube_server.store
    store.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    seed_queues(kube_server, cluster_queue=CQ, namespaces=[NS], gpus=2 * len(SUBMIT))
    store.put(kinds.make_training_runtime(RUNTIME, gpus=1))
    emulator = ClusterEmulator(kube_server, clock=BackdatedClock().now, namespaces=[NS])
    api_client = kubernetes.client.ApiClient(kube_server.configuration())
    client = KubeClient(api_client, timeout=timedelta(seconds=5))
    cluster = CachedKueueCluster(
        client=client, settings=SETTINGS.cluster, cache=SETTINGS.watch_cache
    )
    prometheus = SETTINGS.prometheus.model_copy(update={"url": live_metrics.prometheus.url})
    metrics = PrometheusMetricSource(prometheus=prometheus, policy=SETTINGS.policy)
    policy, audit = build_policy(SETTINGS), FakeAuditLog()
    reconciler = a_loop(
        cluster,
        metrics,
        actuator=KueueActuator(
            client=client, workloads=cluster.workload_resource, clock=SystemClock()
        ),
        policy=policy,
        clock=SystemClock(),
        publish=SnapshotStore().publish,
        logger=logging.getLogger("e2e-every-kind"),
        audit=audit,
        # every idle one of every kind is due at once: the caps and the breaker, tested
        # elsewhere, would only spread the stops over cycles
        screen=a_screen(
            metrics=metrics,
            policy=policy,
            audit=audit,
            rules=GuardRules(max_per_hour=100, breaker=BreakerRules(min_workloads=100)),
        ),
    )
    rig = Rig(kube_server, live_metrics, emulator, reconciler.run_once, set())
    yield rig
    cluster.stop(timedelta(seconds=5))
    metrics.close()
    api_client.close()
    live_metrics.exporter.clear()
    for namespace in (NS, f"{NS}-svc"):
        store.delete_namespace(namespace)
    store.delete("clusterqueues.kueue.x-k8s.io", name=CQ)
    store.delete("clustertrainingruntimes.trainer.kubeflow.org", name=RUNTIME)


@dataclass(frozen=True)
class Story:
    idle: dict[str, str]  # kind -> its idle Workload's name, before the stop
    busy: dict[str, str]
    waiting: dict[str, str]
    requests: list[RecordedRequest]  # what the service asked of the API server meanwhile
    waiters_pending_before: dict[str, bool]


@pytest.fixture(scope="module")
def story(rig: Rig) -> Story:
    for kind, submit in SUBMIT.items():
        for role in (IDLE, BUSY):
            submit(rig.server, name_of(role, kind))
    rig.sync()
    idle, busy = _named(rig, IDLE), _named(rig, BUSY)
    assert all(admitted(rig.workload_of(k, r)) for k in SUBMIT for r in (IDLE, BUSY))
    for kind, submit in SUBMIT.items():
        submit(rig.server, name_of(WAITING, kind))
    rig.sync()
    waiting = _named(rig, WAITING)
    pending = {kind: not admitted(rig.workload_of(kind, WAITING)) for kind in SUBMIT}
    rig.server.requests.clear()

    def all_stopped_and_served(_snapshot: Any) -> bool:
        stopped = {r.path.rsplit("/", 1)[-1] for r in rig.server.requests.all() if r.deactivates}
        return set(idle.values()) <= stopped and all(
            admitted(rig.workload_of(kind, WAITING)) for kind in SUBMIT
        )

    cycle_until(rig.cycle, all_stopped_and_served, timeout_s=60)
    for _ in range(2):  # the busy ones stay busy a while longer: still left alone
        rig.cycle()
    requests = [r for r in rig.server.requests.all() if f"/namespaces/{NS}/" in r.path]
    return Story(idle, busy, waiting, requests, pending)


def _named(rig: Rig, role: str) -> dict[str, str]:
    found = {kind: rig.workload_of(kind, role) for kind in SUBMIT}
    missing = [kind for kind, workload in found.items() if workload is None]
    assert not missing, f"no {role} Workload for {missing}"
    return {kind: w["metadata"]["name"] for kind, w in found.items() if w is not None}


def _writes_on(story: Story, workload: str) -> list[RecordedRequest]:
    return [
        r for r in story.requests if r.method != "GET" and r.path.endswith(f"/workloads/{workload}")
    ]


def test_the_scenario_has_every_kind_of_the_table() -> None:
    assert sorted(SUBMIT) == sorted(KNOWN_OWNERS)


def test_every_kinds_idle_workload_is_deactivated_by_a_merge_patch_of_active_false(
    story: Story,
) -> None:
    for kind, workload in story.idle.items():
        [patch] = [r for r in _writes_on(story, workload) if r.deactivates] or [None]
        assert patch is not None, f"{kind}'s idle Workload {workload} was not deactivated"
        assert patch.content_type == "application/merge-patch+json", kind
        assert patch.body["spec"] == {"active": False}, kind
        assert set(patch.body) <= {"spec", "metadata"}, kind


def test_every_kinds_busy_workload_is_left_alone(rig: Rig, story: Story) -> None:
    for kind, workload in story.busy.items():
        assert _writes_on(story, workload) == [], kind
        found = rig.workload_of(kind, BUSY)
        assert found is not None and found["spec"].get("active", True) is True, kind
        assert admitted(found), kind


# What Kubernetes' own controllers or Kueue own, never written whatever the owner table says
# (ISSUE-NOTES: "never pods, Jobs, StatefulSets or Deployments").
NEVER_WRITTEN = {
    ("batch", "jobs"),
    ("apps", "statefulsets"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("", "pods"),
}


def _group_and_plural(path: str) -> tuple[str, str]:
    """`/apis/<group>/<version>/namespaces/<ns>/<plural>/...` or `/api/v1/...`."""
    parts = path.strip("/").split("/")
    group = parts[1] if parts[0] == "apis" else ""
    after = parts[parts.index("namespaces") + 2 :] if "namespaces" in parts else parts[-2:]
    return group, after[0] if after else ""


def test_owners_pods_and_intermediates_are_never_written(story: Story) -> None:
    """Writes go to Workloads and Events only, and to an owner only as our annotations, where
    its kind is annotated; never a non-GET request of any method to Jobs, StatefulSets,
    Deployments, ReplicaSets or pods."""
    writes = [r for r in story.requests if r.method != "GET"]
    touched = {_group_and_plural(r.path) for r in writes}
    assert not touched & NEVER_WRITTEN, sorted(touched & NEVER_WRITTEN)
    assert all(not KNOWN_OWNERS[kind].annotated for kind in ("Job", "StatefulSet", "Deployment"))
    plurals = {row.plural: row for row in KNOWN_OWNERS.values()}
    for request in writes:
        plural = request.path.partition(f"/namespaces/{NS}/")[2].split("/")[0]
        if plural in ("workloads", "events"):
            continue
        row = plurals.get(plural)
        assert row is not None and row.annotated, f"wrote {request.method} {request.path}"
        assert (request.method, list(request.body)) == ("PATCH", ["metadata"]), request.path
        assert list(request.body["metadata"]) == ["annotations"], request.path


def test_every_waiter_was_pending_and_is_admitted_after_the_stops(rig: Rig, story: Story) -> None:
    assert all(story.waiters_pending_before.values()), story.waiters_pending_before
    for kind in SUBMIT:
        assert admitted(rig.workload_of(kind, WAITING)), kind


def test_a_requeued_kinds_pods_come_back_as_a_new_workload_queued_behind_the_waiter(
    rig: Rig, story: Story
) -> None:
    """Deployment and Notebook: their controller makes the pod again, gated, and its new
    Workload queues; a plain pod is not made again."""
    for kind in ("Deployment", "Notebook"):
        again = rig.workload_of(kind, IDLE)
        assert again is not None, kind
        assert again["metadata"]["name"] != story.idle[kind], kind
        assert not admitted(again), kind
        waiter = rig.workload_of(kind, WAITING)
        assert waiter is not None
        created = again["metadata"]["creationTimestamp"]
        assert created >= waiter["metadata"]["creationTimestamp"], kind
    assert rig.workload_of("Pod", IDLE) is None


def test_the_stop_event_says_what_the_stop_means_for_the_kind(rig: Rig, story: Story) -> None:
    events = rig.server.store.list("events", namespace=NS)
    said = {
        kind: [e["message"] for e in events if e["involvedObject"]["name"] == workload]
        for kind, workload in story.idle.items()
    }
    for kind, messages in said.items():
        stop = [m for m in messages if m.startswith("Deactivated by idle-gpu-autoscaler")]
        assert len(stop) == 1, (kind, messages)
        assert f"{kind} {NS}/{name_of(IDLE, kind)}" in stop[0], stop[0]
        assert (REQUEUE_WORDS in stop[0]) is (kind in REQUEUED), stop[0]
