"""End to end, reclaim on Kueue's own terms, on real parts: the real Prometheus scraping a live
dcgm-exporter every second, the test Kubernetes API server with Kueue emulated (fair sharing,
flavor taints, preemption and the priority boost, `tests/support/cluster_emulator.py`), the
service as `serve` composes it (`build_service`, the real Kueue adapters, the runtime-state
ConfigMap as its audit trail) and its real reconcile pass, one cycle then one Kueue pass.

1. Fair sharing: two ClusterQueues of 4 GPUs in a cohort, weights 2 and 1, Kueue writing
   `status.fairSharing`. Team A's idle cluster holds 1 GPU, team B's idle borrower 6. Team A's
   waiter needs 3: only freeing the borrower lets it in; the borrower alone is stopped, for
   it, and it is admitted; the idle non-borrower stays.
2. A flavor tainted against the waiter: the queue's only flavor carries spot=true:NoSchedule;
   the idle cluster there tolerates it, the waiter does not. Freeing the idle cluster would
   make room, but Kueue would never admit the waiter there: nothing is stopped, and the
   decision says why.
3. `reclaim: via-kueue` with Kueue's PriorityBoost gate on (its Configuration ConfigMap on
   the server) and `withinClusterQueue: LowerPriority`: while nobody waits the idle cluster
   is warned, then marked, and nothing else; a waiter arrives, Kueue preempts exactly the
   marked cluster (not a busy one of the same priority), the service deactivates it at once
   (exactly `spec.active: false`, never its owner), it stays inactive, the waiter is
   admitted, and the Event and the audit record name the waiter. With the gate off the same
   rule does nothing: no warning, no mark, one log line.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import kubernetes.client
import pytest
import yaml

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.kueue.queues import KueueQueues
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.compose.serve import build_shared_state
from autoscaler.compose.service import Service, build_service
from autoscaler.core.clock import SystemClock
from autoscaler.domain import annotations as keys
from autoscaler.domain.audit.records import AuditRecord
from autoscaler.domain.models import Action, Snapshot, State, WorkloadRef
from autoscaler.settings.tree import Settings
from autoscaler.sim.kueue_model import KueueFeatures
from tests.conftest import LiveMetrics
from tests.support.builders import (
    make_cluster_queue,
    make_local_queue,
    make_raycluster,
    make_resource_flavor,
)
from tests.support.cluster_emulator import ClusterEmulator
from tests.support.kube_server import KubeServer, RecordedRequest
from tests.support.seeding import BackdatedClock, cycle_until, gpus_of, submit, workload_of

pytestmark = pytest.mark.slow

WINDOW_S = 4
RUN = uuid.uuid4().hex[:6]
WORKLOADS = "workloads.kueue.x-k8s.io"
SPOT_TAINT = {"key": "spot", "value": "true", "effect": "NoSchedule"}
SPOT_TOLERATION = {**SPOT_TAINT, "operator": "Equal"}
MERGE_PATCH = "application/merge-patch+json"


def settings_for(
    namespaces: list[str], match: dict[str, list[str]], *, reclaim: str, config_namespace: str
) -> Settings:
    return Settings.model_validate(
        {
            "policy": {
                "thresholdPercent": 5,
                "idleWindow": "1h",  # the default rule would never act within this test
                "gracePeriod": "1s",
                "minCoverage": 0.5,
                "slot": "1s",
                "staleAfter": "5s",
                "idleSinceLookback": "2h",
                "warnBefore": "2s",
                "namespaces": {"include": namespaces},
                "dryRun": False,
            },
            "rules": [
                {
                    "name": "shared-gpus",
                    "match": match,
                    "idleWindow": f"{WINDOW_S}s",
                    "reclaim": reclaim,
                }
            ],
            "cluster": {
                "serviceNamespace": namespaces[0],  # the runtime-state ConfigMap: this run's
                "kueueConfiguration": {"namespace": config_namespace},
            },
        }
    )


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@dataclass
class Rig:
    server: KubeServer
    live: LiveMetrics
    emulator: ClusterEmulator
    service: Service
    client: KubeClient
    lines: Lines
    closers: list[Callable[[], None]] = field(default_factory=list)

    def cycle(self) -> Snapshot:
        snapshot = self.service.reconciler.run_once()
        self.emulator.sync()
        return snapshot

    def ref(self, namespace: str, raycluster: str) -> WorkloadRef:
        return WorkloadRef(
            namespace, workload_of(self.server, namespace, raycluster)["metadata"]["name"]
        )

    def workload(self, namespace: str, raycluster: str) -> dict[str, Any]:
        return workload_of(self.server, namespace, raycluster)

    def active(self, namespace: str, raycluster: str) -> bool:
        return bool(self.workload(namespace, raycluster)["spec"].get("active", True))

    def condition(self, namespace: str, raycluster: str, kind: str) -> dict[str, Any] | None:
        conditions = self.workload(namespace, raycluster)["status"]["conditions"]
        return next((c for c in conditions if c["type"] == kind), None)

    def admitted(self, namespace: str, raycluster: str) -> bool:
        found = self.condition(namespace, raycluster, "Admitted")
        return found is not None and found["status"] == "True"

    def annotations(self, namespace: str, raycluster: str) -> dict[str, str]:
        return dict(self.workload(namespace, raycluster)["metadata"].get("annotations") or {})

    def use(self, namespace: str, raycluster: str, utilization: int) -> None:
        for gpu in gpus_of(self.server, namespace, raycluster):
            self.live.exporter.set(gpu, utilization=utilization)

    def audit(self) -> tuple[AuditRecord, ...]:
        return self.service.shared.store.read().audit

    def events(self, namespace: str, name: str) -> list[str]:
        events = self.server.store.list("events", namespace=namespace)
        return [e["message"] for e in events if e["involvedObject"]["name"] == name]


def a_rig(
    server: KubeServer,
    live: LiveMetrics,
    settings: Settings,
    *,
    namespaces: list[str],
    features: KueueFeatures,
) -> Rig:
    emulator = ClusterEmulator(
        server, clock=BackdatedClock().now, namespaces=namespaces, features=features
    )
    emulator.sync()
    api_client = kubernetes.client.ApiClient(server.configuration())
    client = KubeClient(api_client, timeout=timedelta(seconds=5))
    cluster = KueueCluster(client=client, settings=settings.cluster)
    prometheus = settings.prometheus.model_copy(update={"url": live.prometheus.url})
    metrics = PrometheusMetricSource(prometheus=prometheus, policy=settings.policy)
    logger = logging.getLogger(f"e2e-kueue-terms-{namespaces[0]}")
    lines = Lines()
    logger.addHandler(lines)
    clock = SystemClock()
    shared = build_shared_state(
        settings, client=client, cluster=cluster, clock=clock, logger=logger
    )
    service = build_service(
        settings,
        cluster=cluster,
        metrics=metrics,
        clock=clock,
        logger=logger,
        shared=shared,
        pending=KueueQueues(client=client, objects=cluster, logger=logger.getChild("queues")),
        features=cluster,
    )
    rig = Rig(server, live, emulator, service, client, lines)
    rig.closers += [metrics.close, api_client.close, lambda: logger.removeHandler(lines)]
    return rig


def close(rig: Rig, namespaces: list[str], cluster_objects: list[tuple[str, str]]) -> None:
    for closer in rig.closers:
        closer()
    rig.live.exporter.clear()
    for namespace in namespaces:
        rig.server.store.delete_namespace(namespace)
    for resource, name in cluster_objects:
        rig.server.store.delete(resource, name=name)


def idle_past_window(snapshot: Snapshot, *refs: WorkloadRef) -> bool:
    rows = [snapshot.find(ref) for ref in refs]
    return all(
        row is not None
        and row.decision.state is State.IDLE
        and row.decision.time_left == timedelta(0)
        for row in rows
    )


def acted(snapshot: Snapshot, ref: WorkloadRef, action: Action) -> bool:
    return any(a.workload == ref and a.action is action for a in snapshot.actions)


def stopped_in(snapshots: list[Snapshot]) -> list[WorkloadRef]:
    return [a.workload for s in snapshots for a in s.actions if a.action is Action.DEACTIVATE]


def with_tolerations(raycluster: dict[str, Any], *tolerations: dict[str, str]) -> dict[str, Any]:
    spec = raycluster["spec"]
    templates = [spec["headGroupSpec"]["template"]]
    templates += [group["template"] for group in spec.get("workerGroupSpecs", [])]
    for template in templates:
        template["spec"]["tolerations"] = list(tolerations)
    return raycluster


# --- 1. fair sharing: the borrower a waiter needs, and only it

FS_A, FS_B = f"fs-a-{RUN}", f"fs-b-{RUN}"
FS_QA, FS_QB, FS_COHORT = f"fs-cq-a-{RUN}", f"fs-cq-b-{RUN}", f"fs-cohort-{RUN}"


@dataclass(frozen=True)
class FairStory:
    rig: Rig
    nobody_waits: Snapshot
    after: Snapshot
    statuses: dict[str, Any]
    stopped: list[WorkloadRef]


@pytest.fixture(scope="module")
def fair(kube_server: KubeServer, live_metrics: LiveMetrics) -> Iterator[FairStory]:
    store = kube_server.store
    store.put(make_resource_flavor().build())
    for queue, namespace, weight in ((FS_QA, FS_A, "2"), (FS_QB, FS_B, "1")):
        cq = make_cluster_queue(queue).quota(gpus=4, cpu=100).cohort(FS_COHORT).fair_sharing(weight)
        store.put(cq.build())
        store.put(make_local_queue(namespace, "user-queue").cluster_queue(queue).build())
    submit(kube_server, make_raycluster(FS_A, "small").head(gpus=1).queue("user-queue").build())
    borrower = make_raycluster(FS_B, "borrower").head(gpus=2).gpu_worker(replicas=2, gpus=2)
    submit(kube_server, borrower.queue("user-queue").build())
    namespaces = [FS_A, FS_B]
    settings = settings_for(
        namespaces,
        {"clusterQueues": [FS_QA, FS_QB]},
        reclaim="when-contended",
        config_namespace=FS_A,
    )
    rig = a_rig(
        kube_server,
        live_metrics,
        settings,
        namespaces=namespaces,
        features=KueueFeatures(fair_sharing=True),
    )
    try:
        rig.use(FS_A, "small", 0)
        rig.use(FS_B, "borrower", 0)
        small, borrower_ref = rig.ref(FS_A, "small"), rig.ref(FS_B, "borrower")
        seen = [cycle_until(rig.cycle, lambda s: idle_past_window(s, small, borrower_ref))]
        seen += [rig.cycle() for _ in range(2)]
        statuses = {
            name: store.get("clusterqueues.kueue.x-k8s.io", name=name)["status"]
            for name in (FS_QA, FS_QB)
        }
        waiter = make_raycluster(FS_A, "waiter").head(gpus=1).gpu_worker(replicas=1, gpus=2)
        submit(kube_server, waiter.queue("user-queue").build())
        rig.emulator.sync()
        assert not rig.admitted(FS_A, "waiter"), "the waiter must not fit before anything is freed"
        more: list[Snapshot] = []

        def deactivated(snapshot: Snapshot) -> bool:
            more.append(snapshot)
            return acted(snapshot, borrower_ref, Action.DEACTIVATE)

        after = cycle_until(rig.cycle, deactivated)
        more += [rig.cycle()]
        yield FairStory(rig, seen[-1], after, statuses, stopped_in(seen + more))
    finally:
        close(rig, namespaces, [("clusterqueues.kueue.x-k8s.io", q) for q in (FS_QA, FS_QB)])


def test_fair_sharing_kueue_writes_each_queues_weighted_share(fair: FairStory) -> None:
    # The borrower's queue uses 6 of its 4 GPUs: 2 beyond nominal of the cohort's 8 lendable,
    # 250 per mille at weight 1; team A's borrows nothing (clusterqueue_controller.go).
    assert fair.statuses[FS_QB]["fairSharing"] == {"weightedShare": 250}
    assert fair.statuses[FS_QA]["fairSharing"] == {"weightedShare": 0}


def test_fair_sharing_nothing_is_stopped_while_nobody_waits(fair: FairStory) -> None:
    for namespace, name in ((FS_A, "small"), (FS_B, "borrower")):
        row = fair.nobody_waits.find(fair.rig.ref(namespace, name))
        assert row is not None and row.decision.action is Action.NONE
        assert "nobody waits" in row.decision.reason


def test_fair_sharing_only_the_borrower_is_stopped_for_the_waiter_who_is_admitted(
    fair: FairStory,
) -> None:
    rig = fair.rig
    borrower, waiter = rig.ref(FS_B, "borrower"), rig.ref(FS_A, "waiter")
    row = fair.after.find(borrower)
    assert row is not None and row.decision.beneficiary == waiter, row
    assert fair.stopped == [borrower]
    assert rig.active(FS_B, "borrower") is False
    assert rig.admitted(FS_A, "waiter")
    assert rig.active(FS_A, "small") is True
    assert keys.WARNED_AT not in rig.annotations(FS_A, "small")
    small = fair.after.find(rig.ref(FS_A, "small"))
    assert small is not None and small.decision.action is Action.NONE


# --- 2. a waiter whose only flavor is tainted against it frees nothing

TN = f"taint-{RUN}"
TN_Q, TN_FLAVOR = f"taint-cq-{RUN}", f"spot-{RUN}"


@dataclass(frozen=True)
class TaintStory:
    rig: Rig
    last: Snapshot
    stopped: list[WorkloadRef]
    waiter_pending: str


@pytest.fixture(scope="module")
def tainted(kube_server: KubeServer, live_metrics: LiveMetrics) -> Iterator[TaintStory]:
    store = kube_server.store
    flavor = make_resource_flavor(TN_FLAVOR).build()
    flavor["spec"] = {"nodeTaints": [SPOT_TAINT]}
    store.put(flavor)
    store.put(make_cluster_queue(TN_Q).quota(flavor=TN_FLAVOR, gpus=4, cpu=100).build())
    store.put(make_local_queue(TN, "user-queue").cluster_queue(TN_Q).build())
    idle = make_raycluster(TN, "tolerating").head(gpus=1).gpu_worker(replicas=1, gpus=2)
    submit(kube_server, with_tolerations(idle.queue("user-queue").build(), SPOT_TOLERATION))
    settings = settings_for(
        [TN], {"clusterQueues": [TN_Q]}, reclaim="when-contended", config_namespace=TN
    )
    rig = a_rig(kube_server, live_metrics, settings, namespaces=[TN], features=KueueFeatures())
    try:
        assert rig.admitted(TN, "tolerating"), "the tolerating cluster runs in the tainted flavor"
        rig.use(TN, "tolerating", 0)
        ref = rig.ref(TN, "tolerating")
        seen = [cycle_until(rig.cycle, lambda s: idle_past_window(s, ref))]
        waiter = make_raycluster(TN, "untolerating").head(gpus=1).gpu_worker(replicas=1, gpus=2)
        submit(kube_server, waiter.queue("user-queue").build())
        rig.emulator.sync()
        seen += [rig.cycle() for _ in range(4)]  # past warnBefore: a warned stop would be due
        pending = rig.condition(TN, "untolerating", "QuotaReserved")
        assert pending is not None
        yield TaintStory(rig, seen[-1], stopped_in(seen), pending["message"])
    finally:
        close(
            rig,
            [TN],
            [("clusterqueues.kueue.x-k8s.io", TN_Q), ("resourceflavors.kueue.x-k8s.io", TN_FLAVOR)],
        )


def test_tainted_flavor_kueue_keeps_the_waiter_out_whatever_the_free_quota(
    tainted: TaintStory,
) -> None:
    assert not tainted.rig.admitted(TN, "untolerating")
    assert "untolerated taint {spot true NoSchedule <nil>}" in tainted.waiter_pending


def test_tainted_flavor_the_idle_workload_stays_and_the_decision_says_why(
    tainted: TaintStory,
) -> None:
    rig = tainted.rig
    assert tainted.stopped == []
    assert rig.active(TN, "tolerating") is True
    assert keys.WARNED_AT not in rig.annotations(TN, "tolerating")
    row = tainted.last.find(rig.ref(TN, "tolerating"))
    assert row is not None
    assert row.decision.action is Action.NONE
    assert row.decision.beneficiary is None
    assert "untolerated taint spot=true:NoSchedule" in row.decision.reason, row.decision.reason


# --- 3. via-kueue: Kueue preempts exactly the marked workload, for the waiter

VK, VK_OFF = f"via-{RUN}", f"via-off-{RUN}"
VK_Q, VK_OFF_Q = f"via-cq-{RUN}", f"via-off-cq-{RUN}"


def kueue_config(namespace: str, *, priority_boost: bool) -> dict[str, Any]:
    """Kueue's Configuration as its manager's ConfigMap holds it (config/components/manager)."""
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "featureGates": {"PriorityBoost": priority_boost},
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kueue-manager-config", "namespace": namespace},
        "data": {"controller_manager_config.yaml": yaml.safe_dump(config)},
    }


def via_kueue_queue(name: str) -> dict[str, Any]:
    cq = make_cluster_queue(name).quota(gpus=4, cpu=100).build()
    cq["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    return cq


@dataclass(frozen=True)
class ViaStory:
    rig: Rig
    warned: Snapshot
    marked: Snapshot
    waiting_marked: list[Snapshot]  # the cycles after the mark, nobody waiting
    preempted: dict[str, Any]  # the idle Workload as Kueue left it after the preemption
    deactivated: Snapshot
    writes: list[RecordedRequest]
    settled: list[dict[str, Any]]  # the idle Workload after a few more Kueue passes


def submit_pair(server: KubeServer, namespace: str) -> None:
    for name in ("idle", "busy"):
        submit(server, make_raycluster(namespace, name).head(gpus=2).queue("user-queue").build())


@pytest.fixture(scope="module")
def via(kube_server: KubeServer, live_metrics: LiveMetrics) -> Iterator[ViaStory]:
    store = kube_server.store
    store.put(make_resource_flavor().build())
    store.put(via_kueue_queue(VK_Q))
    store.put(make_local_queue(VK, "user-queue").cluster_queue(VK_Q).build())
    store.put(kueue_config(VK, priority_boost=True))
    submit_pair(kube_server, VK)
    settings = settings_for(
        [VK], {"clusterQueues": [VK_Q]}, reclaim="via-kueue", config_namespace=VK
    )
    rig = a_rig(
        kube_server,
        live_metrics,
        settings,
        namespaces=[VK],
        features=KueueFeatures(priority_boost=True),
    )
    try:
        rig.use(VK, "idle", 0)
        rig.use(VK, "busy", 80)
        idle = rig.ref(VK, "idle")
        warned = cycle_until(rig.cycle, lambda s: acted(s, idle, Action.WARN))
        marked = cycle_until(rig.cycle, lambda s: acted(s, idle, Action.MARK))
        waiting_marked = [rig.cycle() for _ in range(3)]
        kube_server.requests.clear()
        submit(kube_server, make_raycluster(VK, "waiter").head(gpus=2).queue("user-queue").build())
        rig.emulator.sync()  # Kueue's pass: the waiter preempts the marked cluster
        preempted = rig.workload(VK, "idle")
        deactivated = rig.cycle()
        settled = []
        for _ in range(3):
            rig.emulator.sync()
            settled.append(rig.workload(VK, "idle"))
        writes = [r for r in kube_server.requests.writes() if f"/namespaces/{VK}/" in r.path]
        yield ViaStory(rig, warned, marked, waiting_marked, preempted, deactivated, writes, settled)
    finally:
        close(rig, [VK], [("clusterqueues.kueue.x-k8s.io", VK_Q)])


def test_via_kueue_while_nobody_waits_the_idle_workload_is_warned_then_marked_only(
    via: ViaStory,
) -> None:
    rig, idle = via.rig, via.rig.ref(VK, "idle")
    assert via.marked.taken_at > via.warned.taken_at
    annotations = via.preempted["metadata"]["annotations"]
    assert annotations[keys.PRIORITY_BOOST] == str(Settings().policy.via_kueue.priority_boost)
    assert keys.MARKED_AT in annotations and keys.WARNED_AT in annotations
    for snapshot in via.waiting_marked:
        row = snapshot.find(idle)
        assert row is not None and row.decision.action is Action.NONE, row
        assert not [a for a in snapshot.actions if a.action is Action.DEACTIVATE]
    busy = rig.annotations(VK, "busy")
    assert keys.PRIORITY_BOOST not in busy and keys.WARNED_AT not in busy


def test_via_kueue_kueue_preempts_exactly_the_marked_workload_not_the_busy_one(
    via: ViaStory,
) -> None:
    conditions = {c["type"]: c for c in via.preempted["status"]["conditions"]}
    assert (conditions["Evicted"]["status"], conditions["Evicted"]["reason"]) == (
        "True",
        "Preempted",
    )
    assert via.preempted["spec"].get("active", True) is True  # Kueue never deactivates
    assert via.rig.admitted(VK, "busy")
    busy = via.rig.condition(VK, "busy", "Evicted")
    assert busy is None or busy["status"] == "False"


def test_via_kueue_the_preempted_workload_is_deactivated_at_once_by_exactly_spec_active(
    via: ViaStory,
) -> None:
    idle = via.rig.ref(VK, "idle")
    assert acted(via.deactivated, idle, Action.DEACTIVATE), via.deactivated.find(idle)
    spec_writes = [r for r in via.writes if isinstance(r.body, dict) and "spec" in r.body]
    assert [r.body["spec"] for r in spec_writes] == [{"active": False}]
    (stop,) = spec_writes
    assert stop.method == "PATCH" and stop.content_type == MERGE_PATCH
    assert stop.path.endswith(f"/workloads/{idle.name}")
    assert not [r for r in via.writes if "/rayclusters/" in r.path and "spec" in (r.body or {})]


def test_via_kueue_the_deactivated_workload_is_not_requeued_and_the_waiter_is_admitted(
    via: ViaStory,
) -> None:
    for workload in via.settled:
        assert workload["spec"]["active"] is False
        conditions = {c["type"]: c for c in workload["status"]["conditions"]}
        assert conditions["Admitted"]["status"] == "False"
        assert conditions["Evicted"]["reason"] == "Preempted"  # Kueue keeps its reason
    assert via.rig.admitted(VK, "waiter")
    assert via.rig.admitted(VK, "busy")


def test_via_kueue_the_event_and_the_audit_record_name_the_waiter(via: ViaStory) -> None:
    rig = via.rig
    idle, waiter = rig.ref(VK, "idle"), rig.ref(VK, "waiter")
    row = via.deactivated.find(idle)
    assert row is not None and row.decision.beneficiary == waiter
    assert rig.annotations(VK, "idle")[keys.DEACTIVATED_FOR] == str(waiter)
    assert any(str(waiter) in message for message in rig.events(VK, idle.name))
    stops = [r for r in rig.audit() if r.action == "deactivate" and r.target == str(idle)]
    assert len(stops) == 1, rig.audit()
    assert stops[0].subject is not None and stops[0].subject.beneficiary == str(waiter)


@dataclass(frozen=True)
class GateOffStory:
    rig: Rig
    last: Snapshot
    actions: list[Action]


@pytest.fixture(scope="module")
def gate_off(kube_server: KubeServer, live_metrics: LiveMetrics) -> Iterator[GateOffStory]:
    store = kube_server.store
    store.put(make_resource_flavor().build())
    store.put(via_kueue_queue(VK_OFF_Q))
    store.put(make_local_queue(VK_OFF, "user-queue").cluster_queue(VK_OFF_Q).build())
    store.put(kueue_config(VK_OFF, priority_boost=False))
    submit(kube_server, make_raycluster(VK_OFF, "idle").head(gpus=2).queue("user-queue").build())
    settings = settings_for(
        [VK_OFF], {"clusterQueues": [VK_OFF_Q]}, reclaim="via-kueue", config_namespace=VK_OFF
    )
    rig = a_rig(kube_server, live_metrics, settings, namespaces=[VK_OFF], features=KueueFeatures())
    try:
        rig.use(VK_OFF, "idle", 0)
        idle = rig.ref(VK_OFF, "idle")
        seen = [cycle_until(rig.cycle, lambda s: idle_past_window(s, idle))]
        seen += [rig.cycle() for _ in range(4)]  # past warnBefore
        actions = [a.action for s in seen for a in s.actions]
        yield GateOffStory(rig, seen[-1], actions)
    finally:
        close(rig, [VK_OFF], [("clusterqueues.kueue.x-k8s.io", VK_OFF_Q)])


def test_via_kueue_with_the_gate_off_does_nothing_and_says_so_once(gate_off: GateOffStory) -> None:
    rig = gate_off.rig
    assert gate_off.actions == []
    annotations = rig.annotations(VK_OFF, "idle")
    assert not {keys.PRIORITY_BOOST, keys.MARKED_AT, keys.WARNED_AT} & set(annotations)
    assert rig.active(VK_OFF, "idle") is True
    row = gate_off.last.find(rig.ref(VK_OFF, "idle"))
    assert row is not None and row.decision.action is Action.NONE
    assert "PriorityBoost" in row.decision.reason, row.decision.reason
    said = [line for line in rig.lines.lines if "PriorityBoost" in line]
    assert len(said) == 1, said
    assert "do nothing" in said[0]
