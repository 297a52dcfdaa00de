"""On the test Kubernetes API server, with the real Kueue adapter and the runtime-state
ConfigMap: the loop's audit record lands in the ConfigMap before the annotations and the
deactivation patch, and the API's auditor does not write it a second time."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes.client import ApiClient
from prometheus_client import CollectorRegistry

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.state.guards import RuntimeGuardStore
from autoscaler.adapters.state.store import RuntimeStateStore
from autoscaler.engine.guarding import Guards
from autoscaler.engine.loop_audit import LoopAuditor
from autoscaler.engine.reconciler import Reconciler
from autoscaler.engine.snapshots import SnapshotStore
from autoscaler.engine.telemetry import ServiceMetrics
from autoscaler.settings.tree import ClusterSettings
from tests.guards.fleet import RULES
from tests.support.builders import make_pod, make_raycluster, make_workload_for
from tests.support.domain_builders import a_policy, usage
from tests.support.fakes import FakeClock, FakeMetrics
from tests.support.kube_server import KubeServer
from tests.support.kube_server.faults import RecordedRequest

STATE = "idle-gpu-autoscaler-state"
_numbers = itertools.count()


@dataclass
class Rig:
    kube: KubeServer
    namespace: str  # the workloads'
    service_namespace: str  # the runtime-state ConfigMap's
    reconciler: Reconciler
    state: RuntimeStateStore
    workload: str

    def requests(self) -> list[RecordedRequest]:
        mine = (f"/namespaces/{self.namespace}/", f"/namespaces/{self.service_namespace}/")
        return [r for r in self.kube.requests.writes() if any(m in r.path for m in mine)]


def seed(kube: KubeServer, namespace: str, *, admitted: datetime) -> str:
    raycluster = make_raycluster(namespace, "idle-rc").head(gpus=1).queue("user-queue").build()
    workload = make_workload_for(raycluster).admitted(at=admitted).build()
    kube.store.put(raycluster)
    kube.store.put(workload)
    kube.store.put(
        make_pod(namespace, "idle-rc-head-0")
        .owned_by_raycluster(raycluster)
        .gpus(1)
        .running(since=admitted)
        .build()
    )
    return str(workload["metadata"]["name"])


@pytest.fixture
def rig(kube_server: KubeServer) -> Iterator[Rig]:
    number = next(_numbers)
    namespace, service_namespace = f"guards-audit-{number}", f"guards-svc-{number}"
    now = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=3)  # objects look old
    clock = FakeClock(now)
    name = seed(kube_server, namespace, admitted=now - timedelta(hours=2))
    metrics = FakeMetrics(
        usage().gpu(namespace, "idle-rc-head-0", peak=0.01, last_sample=now).build(evaluated_at=now)
    )
    log = logging.getLogger("test.guards")
    with ApiClient(kube_server.configuration()) as api_client:
        client = KubeClient(api_client, timeout=timedelta(seconds=5))
        settings = ClusterSettings(
            service_namespace=service_namespace, runtime_state_config_map=STATE
        )
        cluster = KueueCluster(client=client, settings=settings, clock=clock)
        state = RuntimeStateStore(
            client=client,
            name=STATE,
            namespace=service_namespace,
            audit_limit=200,
            attempts=5,
            logger=log,
        )
        store = RuntimeGuardStore(store=state, audit_limit=200, clock=clock)
        policy = a_policy()
        guards = Guards(
            rules=RULES,
            policy=policy,
            audit=store,
            state=store,
            metrics=metrics,
            interval=timedelta(minutes=1),
            logger=log,
        )
        snapshots = SnapshotStore()
        auditor = LoopAuditor(
            audit=state, metrics=ServiceMetrics(CollectorRegistry(), clock=clock), logger=log
        )
        snapshots.subscribe(auditor)
        reconciler = Reconciler(
            cluster=cluster,
            metrics=metrics,
            policy=policy,
            clock=clock,
            publish=snapshots.publish,
            logger=log,
            guards=guards,
        )
        yield Rig(kube_server, namespace, service_namespace, reconciler, state, name)
    for owned in (namespace, service_namespace):  # its admitted Workload holds GPU quota
        kube_server.store.delete_namespace(owned)


def is_deactivation(request: RecordedRequest) -> bool:
    return request.method == "PATCH" and request.body == {"spec": {"active": False}}


def is_audit_write(request: RecordedRequest) -> bool:
    if "/configmaps" not in request.path or not isinstance(request.body, dict):
        return False
    return '"action": "deactivate"' in request.body.get("data", {}).get("audit", "")


def test_the_config_map_record_is_written_before_the_annotations_and_the_patch(rig: Rig) -> None:
    snapshot = rig.reconciler.run_once()
    assert [a.outcome for a in snapshot.actions] == ["done"]
    writes = rig.requests()
    audit = next(i for i, r in enumerate(writes) if is_audit_write(r))
    annotations = next(
        i
        for i, r in enumerate(writes)
        if r.method == "PATCH" and "annotations" in (r.body or {}).get("metadata", {})
    )
    patch = next(i for i, r in enumerate(writes) if is_deactivation(r))
    assert audit < annotations < patch


def test_the_loops_record_is_in_the_config_map_once_with_its_reason(rig: Rig) -> None:
    rig.reconciler.run_once()
    records = [r for r in rig.state.read().audit if r.target == f"{rig.namespace}/{rig.workload}"]
    assert [(r.actor, r.action, r.outcome) for r in records] == [
        ("idle-gpu-autoscaler", "deactivate", "started")
    ]
    assert "idle for the whole window" in records[0].reason
    assert (records[0].peak, records[0].threshold, records[0].gpus) == (0.01, 0.05, 1)
