"""On the test Kubernetes API server, with the real Kueue adapter and the runtime-state
ConfigMap: the loop's audit record lands in the ConfigMap before the deactivation patch (which
carries the audit annotations), the API's auditor does not write it a second time, and a
patch whose answer was lost is settled on the next cycle from the Workload itself."""

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
from autoscaler.adapters.kueue.actuator import KueueActuator
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.state.guards import RuntimeGuardStore
from autoscaler.adapters.state.store import RuntimeStateStore
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.outcomes import Outcome, OutcomeKind
from autoscaler.engine.cycle.reconciler import Reconciler
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.engine.listeners.loop_audit import LoopAuditor
from autoscaler.engine.metrics.telemetry import ServiceMetrics
from autoscaler.settings.tree import ClusterSettings
from tests.guards.fleet import RULES
from tests.support.builders import make_pod, make_raycluster, make_workload_for
from tests.support.domain_builders import a_policy, usage
from tests.support.fakes import FakeClock, FakeMetrics
from tests.support.kube_server import KubeServer
from tests.support.kube_server.faults import RecordedRequest
from tests.support.loop_builders import a_loop, a_screen

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
    clock: FakeClock

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
        cluster = KueueCluster(client=client, settings=settings)
        actuator = KueueActuator(client=client, workloads=cluster.workload_resource, clock=clock)
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
        snapshots = SnapshotStore()
        auditor = LoopAuditor(
            audit=state, metrics=ServiceMetrics(CollectorRegistry(), clock=clock), logger=log
        )
        snapshots.subscribe(auditor)
        reconciler = a_loop(
            cluster,
            metrics,
            actuator=actuator,
            policy=policy,
            clock=clock,
            publish=snapshots.publish,
            logger=log,
            audit=store,
            screen=a_screen(
                metrics=metrics, policy=policy, audit=store, state=store, rules=RULES, logger=log
            ),
        )
        yield Rig(kube_server, namespace, service_namespace, reconciler, state, name, clock)
    for owned in (namespace, service_namespace):  # its admitted Workload holds GPU quota
        kube_server.store.delete_namespace(owned)


def is_deactivation(request: RecordedRequest) -> bool:
    """One patch: `spec.active: false` with our audit annotations, so the annotation proves
    the patch applied."""
    if request.method != "PATCH" or not isinstance(request.body, dict):
        return False
    annotations = (request.body.get("metadata") or {}).get("annotations") or {}
    return request.body.get("spec") == {"active": False} and keys.DEACTIVATED_AT in annotations


def is_audit_write(request: RecordedRequest) -> bool:
    if "/configmaps" not in request.path or not isinstance(request.body, dict):
        return False
    return '"action": "deactivate"' in request.body.get("data", {}).get("audit", "")


def test_the_config_map_record_is_written_before_the_patch_then_the_owner_is_annotated(
    rig: Rig,
) -> None:
    snapshot = rig.reconciler.run_once()
    assert [a.outcome for a in snapshot.actions] == [Outcome.done()]
    writes = rig.requests()
    audit = next(i for i, r in enumerate(writes) if is_audit_write(r))
    patch = next(i for i, r in enumerate(writes) if is_deactivation(r))
    owner = next(
        i
        for i, r in enumerate(writes)
        if r.method == "PATCH" and "/rayclusters/" in r.path and is_annotation_patch(r)
    )
    assert audit < patch < owner
    body = next(r.body for r in writes if is_deactivation(r))
    assert body["metadata"]["annotations"][keys.DEACTIVATED_AT] == time_text(rig.clock.now())


def test_the_loops_record_is_in_the_config_map_once_with_its_reason(rig: Rig) -> None:
    rig.reconciler.run_once()
    records = [r for r in rig.state.read().audit if r.target == f"{rig.namespace}/{rig.workload}"]
    assert [(r.actor, r.action, r.outcome) for r in records] == [
        ("idle-gpu-autoscaler", "deactivate", "done")
    ], "the record written before the patch settles to done once it succeeded"
    assert "idle for the whole window" in records[0].reason
    assert (records[0].peak, records[0].threshold, records[0].gpus) == (0.01, 0.05, 1)


def is_annotation_patch(request: RecordedRequest) -> bool:
    return isinstance(request.body, dict) and "annotations" in (request.body.get("metadata") or {})


def loop_outcomes(rig: Rig) -> list[tuple[str, str]]:
    """(action, outcome) of the loop's records about the workload, oldest first."""
    target = f"{rig.namespace}/{rig.workload}"
    records = [r for r in rig.state.read().audit if r.target == target]
    return [(r.action, r.outcome) for r in reversed(records)]  # the trail is newest first


def test_a_patch_applied_whose_answer_was_lost_is_settled_from_the_workload_next_cycle(
    rig: Rig,
) -> None:
    rig.kube.faults.lose_answer_after_applying("PATCH", when=is_deactivation)
    first = rig.reconciler.run_once()

    [action] = first.actions
    assert action.outcome.kind is OutcomeKind.UNKNOWN
    applied = rig.kube.store.get(
        "workloads.kueue.x-k8s.io", name=rig.workload, namespace=rig.namespace
    )
    assert applied["spec"]["active"] is False, "the server applied it; only the answer was lost"
    assert [outcome.split(":")[0] for _, outcome in loop_outcomes(rig)] == ["started", "unknown"]

    # A GitOps tool sets it back before the next cycle: spec.active alone would say "never".
    rig.kube.store.patch(
        "workloads.kueue.x-k8s.io",
        name=rig.workload,
        namespace=rig.namespace,
        patch={"spec": {"active": True}},
    )
    rig.clock.advance(timedelta(minutes=1))
    rig.reconciler.run_once()

    outcomes = loop_outcomes(rig)
    assert outcomes[:3] == [
        ("deactivate", "started"),
        ("deactivate", outcomes[1][1]),
        ("deactivate", "done: confirmed: the Workload carries our deactivated-at annotation"),
    ]
    assert ("undone", "counted") in outcomes, "the undo of a confirmed deactivation is counted"
