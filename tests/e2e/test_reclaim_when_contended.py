"""End to end, "reclaim only where someone waits" on real parts: the real Prometheus scraping a
live dcgm-exporter every second, the test Kubernetes API server with Kueue's admission
emulated (cohort borrowing included), the real adapters and the real reconcile pass.

Two ClusterQueues of 4 GPUs share a cohort. Team A's cluster holds 1 GPU of its queue; team
B's holds 6, borrowing 2 of team A's unused quota. Both go idle, under a rule that reclaims
only when contended: while nobody waits, nothing is stopped. Then team A submits a cluster
that needs 3 GPUs: 1 is free in the cohort. Freeing team A's own idle cluster would make 2
(not enough); freeing the borrower makes 7. Only the borrower is deactivated, for that
waiter, and the waiter is admitted; team A's idle cluster stays.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import kubernetes.client
import pytest

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.actuator import KueueActuator
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.kueue.queues import KueueQueues
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.core.clock import SystemClock
from autoscaler.domain import annotations as keys
from autoscaler.domain.models import Action, Snapshot, State, WorkloadRef
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
)
from tests.support.cluster_emulator import ClusterEmulator
from tests.support.kube_server import KubeServer
from tests.support.loop_builders import a_loop
from tests.support.seeding import (
    BackdatedClock,
    cycle_until,
    gpus_of,
    submit,
    workload_of,
)

pytestmark = pytest.mark.slow

WINDOW_S = 4
RUN = uuid.uuid4().hex[:6]
TEAM_A, TEAM_B = f"team-a-{RUN}", f"team-b-{RUN}"
QUEUE_A, QUEUE_B, COHORT = f"cq-a-{RUN}", f"cq-b-{RUN}", f"cohort-{RUN}"
SETTINGS = Settings.model_validate(
    {
        "policy": {
            "thresholdPercent": 5,
            "idleWindow": "1h",  # the default rule would never act within this test
            "gracePeriod": "1s",
            "minCoverage": 0.5,
            "slot": "1s",
            "staleAfter": "5s",
            "idleSinceLookback": "2h",
            "warnBefore": "2s",  # the stop picked for the waiter is warned first (ISSUE 15)
            "namespaces": {"include": [TEAM_A, TEAM_B]},
            "dryRun": False,
        },
        "rules": [
            {
                "name": "shared-gpus",
                "match": {"clusterQueues": [QUEUE_A, QUEUE_B]},
                "idleWindow": f"{WINDOW_S}s",
                "reclaim": "when-contended",
            }
        ],
        "cluster": {"serviceNamespace": "idle-gpu-autoscaler"},
    }
)


@dataclass
class Rig:
    server: KubeServer
    live: LiveMetrics
    emulator: ClusterEmulator
    reconciler: Reconciler

    def cycle(self) -> Snapshot:
        snapshot = self.reconciler.run_once()
        self.emulator.sync()
        return snapshot

    def ref(self, namespace: str, raycluster: str) -> WorkloadRef:
        workload = workload_of(self.server, namespace, raycluster)
        return WorkloadRef(namespace, workload["metadata"]["name"])

    def active(self, namespace: str, raycluster: str) -> bool:
        workload = workload_of(self.server, namespace, raycluster)
        return bool(workload["spec"].get("active", True))

    def admitted(self, namespace: str, raycluster: str) -> bool:
        conditions = workload_of(self.server, namespace, raycluster)["status"]["conditions"]
        return any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions)

    def idle(self, namespace: str, raycluster: str) -> None:
        for gpu in gpus_of(self.server, namespace, raycluster):
            self.live.exporter.set(gpu, utilization=0)


def seed(server: KubeServer) -> None:
    store = server.store
    store.put(make_resource_flavor().build())
    for queue, namespace in ((QUEUE_A, TEAM_A), (QUEUE_B, TEAM_B)):
        store.put(make_cluster_queue(queue).quota(gpus=4, cpu=100).cohort(COHORT).build())
        store.put(make_local_queue(namespace, "user-queue").cluster_queue(queue).build())
    submit(server, make_raycluster(TEAM_A, "small").head(gpus=1).queue("user-queue").build())
    borrower = make_raycluster(TEAM_B, "borrower").head(gpus=2).gpu_worker(replicas=2, gpus=2)
    submit(server, borrower.queue("user-queue").build())


@pytest.fixture(scope="module")
def rig(kube_server: KubeServer, live_metrics: LiveMetrics) -> Iterator[Rig]:
    seed(kube_server)
    emulator = ClusterEmulator(kube_server, clock=BackdatedClock().now, namespaces=[TEAM_A, TEAM_B])
    emulator.sync()
    api_client = kubernetes.client.ApiClient(kube_server.configuration())
    client = KubeClient(api_client, timeout=timedelta(seconds=5))
    cluster = KueueCluster(client=client, settings=SETTINGS.cluster)
    prometheus = SETTINGS.prometheus.model_copy(update={"url": live_metrics.prometheus.url})
    metrics = PrometheusMetricSource(prometheus=prometheus, policy=SETTINGS.policy)
    reconciler = a_loop(
        cluster,
        metrics,
        actuator=KueueActuator(
            client=client, workloads=cluster.workload_resource, clock=SystemClock()
        ),
        pending=KueueQueues(client=client, objects=cluster, logger=logging.getLogger("queues")),
        policy=build_policy(SETTINGS),
        clock=SystemClock(),
        publish=SnapshotStore().publish,
        logger=logging.getLogger("e2e-contended"),
    )
    rig = Rig(kube_server, live_metrics, emulator, reconciler)
    rig.idle(TEAM_A, "small")
    rig.idle(TEAM_B, "borrower")
    yield rig
    metrics.close()
    api_client.close()
    live_metrics.exporter.clear()
    for namespace in (TEAM_A, TEAM_B):
        kube_server.store.delete_namespace(namespace)
    for queue in (QUEUE_A, QUEUE_B):
        kube_server.store.delete("clusterqueues.kueue.x-k8s.io", name=queue)


def idle_past_window(snapshot: Snapshot, ref: WorkloadRef) -> bool:
    row = snapshot.find(ref)
    return (
        row is not None
        and row.decision.state is State.IDLE
        and row.decision.time_left == timedelta(0)
    )


@dataclass(frozen=True)
class Story:
    nobody_waits: Snapshot
    warned: Snapshot
    after_waiter: Snapshot


@pytest.fixture(scope="module")
def story(rig: Rig) -> Story:
    small, borrower = rig.ref(TEAM_A, "small"), rig.ref(TEAM_B, "borrower")
    both_idle = cycle_until(
        rig.cycle, lambda s: idle_past_window(s, small) and idle_past_window(s, borrower)
    )
    for _ in range(3):  # a few more cycles with nobody waiting: still nothing
        both_idle = rig.cycle()
    waiter = make_raycluster(TEAM_A, "waiter").head(gpus=1).gpu_worker(replicas=1, gpus=2)
    submit(rig.server, waiter.queue("user-queue").build())
    rig.emulator.sync()
    assert not rig.admitted(TEAM_A, "waiter"), "the waiter must not fit before anything is freed"
    warned = cycle_until(rig.cycle, lambda s: acted(s, borrower, Action.WARN))
    after = cycle_until(rig.cycle, lambda s: acted(s, borrower, Action.DEACTIVATE))
    rig.emulator.sync()
    return Story(both_idle, warned, after)


def acted(snapshot: Snapshot, ref: WorkloadRef, action: Action) -> bool:
    return any(a.workload == ref and a.action is action for a in snapshot.actions)


def test_with_nobody_waiting_idle_workloads_under_when_contended_are_left_running(
    rig: Rig, story: Story
) -> None:
    for namespace, name in ((TEAM_A, "small"), (TEAM_B, "borrower")):
        row = story.nobody_waits.find(rig.ref(namespace, name))
        assert row is not None
        assert row.decision.state is State.IDLE
        assert row.decision.action is Action.NONE
        assert row.decision.rule.name == "shared-gpus"
        assert "nobody waits" in row.decision.reason
    assert not [a for a in story.nobody_waits.actions if a.action is Action.DEACTIVATE]


def test_only_the_borrower_is_deactivated_for_the_waiter_and_the_waiter_is_admitted(
    rig: Rig, story: Story
) -> None:
    borrower = rig.ref(TEAM_B, "borrower")
    row = story.after_waiter.find(borrower)
    assert row is not None
    assert row.decision.beneficiary == rig.ref(TEAM_A, "waiter")
    assert rig.active(TEAM_B, "borrower") is False
    assert rig.admitted(TEAM_A, "waiter")


def test_the_stop_for_the_waiter_is_warned_first_and_made_no_sooner_than_promised(
    rig: Rig, story: Story
) -> None:
    borrower = rig.ref(TEAM_B, "borrower")
    warned = story.warned.find(borrower)
    assert warned is not None and warned.decision.beneficiary == rig.ref(TEAM_A, "waiter")
    promised = warned.decision.notice.stop_at
    assert promised is not None
    assert story.after_waiter.taken_at >= promised
    assert rig.active(TEAM_A, "small") is True  # not picked, so never warned or stopped
    annotations = workload_of(rig.server, TEAM_A, "small")["metadata"].get("annotations", {})
    assert keys.WARNED_AT not in annotations


def test_the_other_idle_workload_stays_because_freeing_it_would_not_let_the_waiter_in(
    rig: Rig, story: Story
) -> None:
    assert rig.active(TEAM_A, "small") is True
    row = story.after_waiter.find(rig.ref(TEAM_A, "small"))
    assert row is not None
    assert row.decision.action is Action.NONE


def test_the_borrowers_workload_and_event_name_the_waiter_it_was_stopped_for(
    rig: Rig, story: Story
) -> None:
    borrower, waiter = rig.ref(TEAM_B, "borrower"), rig.ref(TEAM_A, "waiter")
    workload = workload_of(rig.server, TEAM_B, "borrower")
    assert workload["metadata"]["annotations"][keys.DEACTIVATED_FOR] == str(waiter)
    events = rig.server.store.list("events", namespace=TEAM_B)
    messages = [e["message"] for e in events if e["involvedObject"]["name"] == borrower.name]
    assert any(str(waiter) in message for message in messages), messages
