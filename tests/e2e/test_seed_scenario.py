"""End to end, the scenario of the Kueue + KEDA proof of concept (seed 001), on real parts:
the real Prometheus scraping a live dcgm-exporter every second, the test Kubernetes API
server with Kueue's admission emulated, the real adapters and the real reconcile pass.

A ClusterQueue has 2 GPUs; two RayClusters (a head and a worker, 1 GPU each) ask for 2 each.
The first is admitted and trains, the second waits. The first goes idle; after the idle
window (seconds here) its Workload gets `spec.active: false`, and Kueue admits the second.
Beside it, in another namespace, the cases that must be left alone and one that must not.

The session's test API server is shared: this module's namespaces and ClusterQueues carry a
name of their own, the policy judges only its namespaces, its Kueue sees only their
Workloads, and all of it is deleted afterwards.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import kubernetes.client
import pytest

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.actuator import KueueActuator
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.core.clock import SystemClock
from autoscaler.domain.models import Action, Snapshot, State, WorkloadRef
from autoscaler.domain.outcomes import Outcome
from autoscaler.engine.cycle.reconciler import Reconciler
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings
from tests.conftest import LiveMetrics
from tests.support.builders import (
    make_cluster_queue,
    make_local_queue,
    make_raycluster,
    make_resource_flavor,
    make_workload_priority_class,
)
from tests.support.cluster_emulator import ClusterEmulator
from tests.support.kube_server import KubeServer
from tests.support.loop_builders import a_loop
from tests.support.seeding import (
    BackdatedClock,
    cycle_until,
    describe,
    gpus_of,
    submit,
    workload_of,
)

pytestmark = pytest.mark.slow

WINDOW_S = 6
SCRAPE_SECONDS = 1  # the live exporter's scrape interval (tests/support/prom)
RUN = uuid.uuid4().hex[:6]
DEMO, OTHERS = f"demo-{RUN}", f"e2e-others-{RUN}"
QUEUE, BIG_QUEUE = f"cluster-queue-{RUN}", f"e2e-big-queue-{RUN}"
SETTINGS = Settings.model_validate(
    {
        "policy": {
            "thresholdPercent": 5,
            "idleWindow": f"{WINDOW_S}s",
            "gracePeriod": "20s",
            "minCoverage": 0.5,
            "slot": "1s",
            "staleAfter": "5s",
            "idleSinceLookback": "5m",
            "warnBefore": "2s",  # warned before the stop, as the product's default 15m would
            "protectedPriorityClasses": ["prod-priority"],
            "namespaces": {"include": [DEMO, OTHERS]},
            "dryRun": False,
        },
        "cluster": {"serviceNamespace": "idle-gpu-autoscaler"},
    }
)


@dataclass
class Rig:
    server: KubeServer
    live: LiveMetrics
    emulator: ClusterEmulator
    reconciler: Reconciler
    backdate: timedelta = timedelta(0)

    def cycle(self) -> Snapshot:
        snapshot = self.reconciler.run_once()
        self.emulator.sync()
        return snapshot

    def workload(self, namespace: str, raycluster: str) -> dict[str, Any]:
        return workload_of(self.server, namespace, raycluster)

    def ref(self, namespace: str, raycluster: str) -> WorkloadRef:
        return WorkloadRef(namespace, self.workload(namespace, raycluster)["metadata"]["name"])

    def set_utilization(self, namespace: str, raycluster: str, percent: float) -> None:
        for gpu in gpus_of(self.server, namespace, raycluster):
            self.live.exporter.set(gpu, utilization=percent)

    def deactivation_patches(self) -> list[Any]:
        return [
            r
            for r in self.server.requests.matching("PATCH", "/apis/kueue.x-k8s.io")
            if r.deactivates
        ]


def seed_queues(server: KubeServer) -> None:
    store = server.store
    store.put(make_resource_flavor().build())
    store.put(make_workload_priority_class("prod-priority", value=1000).build())
    store.put(make_cluster_queue(QUEUE).quota(gpus=2, cpu=100).build())
    store.put(make_cluster_queue(BIG_QUEUE).quota(gpus=100, cpu=1000).build())
    store.put(make_local_queue(DEMO, "user-queue").cluster_queue(QUEUE).build())
    store.put(make_local_queue(OTHERS, "user-queue").cluster_queue(BIG_QUEUE).build())


def delete_everything_seeded(server: KubeServer) -> None:
    for namespace in (DEMO, OTHERS):
        server.store.delete_namespace(namespace)
    for queue in (QUEUE, BIG_QUEUE):
        server.store.delete("clusterqueues.kueue.x-k8s.io", name=queue)


def seed_rayclusters(server: KubeServer) -> None:
    def two_gpu(ns: str, name: str) -> Any:
        return (
            make_raycluster(ns, name)
            .head(gpus=1)
            .gpu_worker(replicas=1, gpus=1)
            .queue("user-queue")
        )

    submit(server, two_gpu(DEMO, "first-raycluster").build())
    submit(server, two_gpu(DEMO, "second-raycluster").build())
    cpu_head = make_raycluster(OTHERS, "cpu-head").head(gpus=0).gpu_worker(replicas=2, gpus=1)
    submit(server, cpu_head.queue("user-queue").build())
    for name in ("busy", "exempt", "missing-series"):
        submit(server, two_gpu(OTHERS, name).build())
    submit(server, two_gpu(OTHERS, "protected").priority_class("prod-priority").build())
    cpu_only = make_raycluster(OTHERS, "cpu-only").head(gpus=0).worker_group(replicas=1)
    submit(server, cpu_only.queue("user-queue").build())
    exempt = server.store.get("rayclusters.ray.io", name="exempt", namespace=OTHERS)
    exempt["metadata"].setdefault("annotations", {})["idle-gpu-autoscaler.io/exempt"] = "true"
    server.store.put(exempt)


@pytest.fixture(scope="module")
def rig(kube_server: KubeServer, live_metrics: LiveMetrics) -> Iterator[Rig]:
    seed_queues(kube_server)
    seed_rayclusters(kube_server)
    kueue_clock = BackdatedClock()
    emulator = ClusterEmulator(kube_server, clock=kueue_clock.now, namespaces=[DEMO, OTHERS])
    emulator.sync()
    kueue_clock.offset = timedelta(0)  # later admissions happen now, in their grace period
    api_client = kubernetes.client.ApiClient(kube_server.configuration())
    client = KubeClient(api_client, timeout=timedelta(seconds=5))
    cluster = KueueCluster(client=client, settings=SETTINGS.cluster)
    settings = SETTINGS.model_copy(
        update={
            "prometheus": SETTINGS.prometheus.model_copy(
                update={"url": live_metrics.prometheus.url}
            )
        }
    )
    metrics = PrometheusMetricSource(prometheus=settings.prometheus, policy=settings.policy)
    reconciler = a_loop(
        cluster,
        metrics,
        actuator=KueueActuator(
            client=client, workloads=cluster.workload_resource, clock=SystemClock()
        ),
        policy=build_policy(settings),
        clock=SystemClock(),
        publish=SnapshotStore().publish,
        logger=logging.getLogger("e2e"),
    )
    rig = Rig(kube_server, live_metrics, emulator, reconciler)
    for namespace, name in [(DEMO, "first-raycluster"), (OTHERS, "busy")]:
        rig.set_utilization(namespace, name, 85)
    for name in ("cpu-head", "exempt", "protected"):
        rig.set_utilization(OTHERS, name, 0)
    gpus = gpus_of(kube_server, OTHERS, "missing-series")
    live_metrics.exporter.set(gpus[0], utilization=0)  # the other GPU has no series at all
    yield rig
    metrics.close()
    api_client.close()
    live_metrics.exporter.clear()
    delete_everything_seeded(kube_server)


def state_of(snapshot: Snapshot, ref: WorkloadRef) -> State:
    row = snapshot.find(ref)
    assert row is not None, f"{ref} not in snapshot"
    return row.decision.state


@dataclass(frozen=True)
class Story:
    """The seed's story as it was played: what the cycles saw while the first cluster
    trained, and how long after it went idle its deactivation came."""

    while_busy: Snapshot
    idle_for_s: float


@pytest.fixture(scope="module")
def story(rig: Rig) -> Story:
    """The first cluster trains, goes idle and is deactivated; each test checks one outcome,
    in whatever order they run."""
    first = rig.ref(DEMO, "first-raycluster")
    while_busy = cycle_until(rig.cycle, lambda s: state_of(s, first) is State.BUSY)
    rig.set_utilization(DEMO, "first-raycluster", 0)
    went_idle = time.monotonic()
    cycle_until(
        rig.cycle,
        lambda s: any(
            a.workload == first and a.action is Action.DEACTIVATE and a.outcome == Outcome.done()
            for a in s.actions
        ),
    )
    return Story(while_busy, time.monotonic() - went_idle)


def test_the_idle_cluster_is_deactivated_after_the_window_and_the_next_is_admitted(
    rig: Rig, story: Story
) -> None:
    second = rig.ref(DEMO, "second-raycluster")
    assert state_of(story.while_busy, second) is State.PENDING
    # The last busy sample may have been scraped up to one interval before the switch to 0.
    earliest = WINDOW_S - SCRAPE_SECONDS
    assert story.idle_for_s >= earliest, "deactivated before the idle window passed"

    assert rig.workload(DEMO, "first-raycluster")["spec"]["active"] is False
    admitted = rig.workload(DEMO, "second-raycluster")["status"]["conditions"]
    assert any(c["type"] == "Admitted" and c["status"] == "True" for c in admitted)
    second_pods = rig.server.store.list(
        "pods", namespace=DEMO, label_selector="ray.io/cluster=second-raycluster"
    )
    assert len(second_pods) == 2
    first_rc = rig.server.store.get("rayclusters.ray.io", name="first-raycluster", namespace=DEMO)
    assert first_rc["metadata"]["annotations"]["idle-gpu-autoscaler.io/deactivated-reason"]


def test_the_stop_was_announced_by_a_warning_event_before_it_was_made(
    rig: Rig, story: Story
) -> None:
    first = rig.ref(DEMO, "first-raycluster")
    events = rig.server.store.list("events", namespace=DEMO)
    told = [e["reason"] for e in events if e["involvedObject"]["name"] == first.name]
    assert "IdleGPUStopPlanned" in told and "IdleGPUDeactivated" in told, told
    assert told.index("IdleGPUStopPlanned") < told.index("IdleGPUDeactivated")


def test_the_deactivation_is_exactly_a_merge_patch_of_spec_active_false(
    rig: Rig, story: Story
) -> None:
    first = rig.ref(DEMO, "first-raycluster")
    patches = [p for p in rig.deactivation_patches() if p.path.endswith(f"/{first.name}")]
    assert len(patches) == 1
    assert patches[0].content_type == "application/merge-patch+json"
    suspends = [
        r
        for r in rig.server.requests.writes()
        if r.path.startswith("/apis/ray.io")
        and "suspend" in str(r.body)
        and any(f"/namespaces/{ns}/" in r.path for ns in (DEMO, OTHERS))
    ]
    # Only this module's namespaces: the shared server also logs other modules' services,
    # among them the suspend actuators' own end-to-end tests.
    assert suspends == [], "the service must never touch RayCluster spec.suspend"


def test_an_event_says_why_and_how_to_get_the_cluster_back(rig: Rig, story: Story) -> None:
    first = rig.ref(DEMO, "first-raycluster")
    events = rig.server.store.list("events", namespace=DEMO)
    on_workload = [
        e
        for e in events
        if e["involvedObject"]["name"] == first.name and e["reason"] == "IdleGPUDeactivated"
    ]
    assert on_workload, "no deactivation Event on the Workload"
    message = on_workload[0]["message"]
    assert "spec" in message and "active" in message and "true" in message
    assert "idle" in message


def test_an_idle_cluster_with_a_cpu_only_head_is_deactivated_and_the_rest_left_alone(
    rig: Rig, story: Story
) -> None:
    cpu_head = rig.ref(OTHERS, "cpu-head")
    snapshot = cycle_until(rig.cycle, lambda s: state_of(s, cpu_head) is State.DEACTIVATED)
    expected = {
        "busy": State.BUSY,
        "exempt": State.EXEMPT,
        "missing-series": State.UNKNOWN,
        "protected": State.PROTECTED,
        "cpu-only": State.UNKNOWN,
    }
    for name, state in expected.items():
        assert state_of(snapshot, rig.ref(OTHERS, name)) is state, describe(snapshot)
        assert rig.workload(OTHERS, name)["spec"].get("active", True) is True
    assert state_of(snapshot, rig.ref(DEMO, "second-raycluster")) is State.GRACE


def test_a_cluster_admitted_moments_ago_is_in_its_grace_period_even_when_idle(rig: Rig) -> None:
    late = (
        make_raycluster(OTHERS, "late")
        .head(gpus=1)
        .gpu_worker(replicas=1, gpus=1)
        .queue("user-queue")
    )
    submit(rig.server, late.build())
    rig.emulator.sync()
    rig.set_utilization(OTHERS, "late", 0)
    snapshot = rig.cycle()
    row = snapshot.find(rig.ref(OTHERS, "late"))
    assert row is not None
    assert row.decision.state is State.GRACE
    assert row.decision.action is Action.NONE
