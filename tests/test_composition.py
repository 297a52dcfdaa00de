"""The composition root wires the loop, the KEDA scaler and KEDA-managed detection together,
and a crashed cycle to the errors metric."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Sequence

import grpc
import pytest

from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.compose.service import build_service
from autoscaler.domain.models import Action, State, WorkloadInfo, WorkloadRef
from autoscaler.domain.program import METRIC_PREFIX as PREFIX
from autoscaler.engine.metrics.telemetry import LOOP_CRASH
from autoscaler.keda import externalscaler_pb2 as pb
from autoscaler.keda import externalscaler_pb2_grpc as pb_grpc
from autoscaler.settings.tree import Settings
from tests.support.domain_builders import NOW, a_workload, minutes_ago, usage
from tests.support.fakes import FakeClock, FakeCluster, FakeMetrics
from tests.support.loop_builders import in_memory_shared

SCALER = "idle-gpu-autoscaler.gpu-ops.svc.cluster.local:{port}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scaled_object(namespace: str, target: str, address: str) -> dict[str, object]:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": f"{target}-idle", "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": target},
            "triggers": [{"type": "external", "metadata": {"scalerAddress": address}}],
        },
    }


@pytest.fixture
def settings() -> Settings:
    return Settings.model_validate(
        {
            "policy": {"dryRun": False},
            "cluster": {"serviceNamespace": "gpu-ops"},
            "keda": {"enabled": True, "port": free_port()},
            # A second view, as a trigger's `profile: short` names it; team-a is not its.
            "rules": [{"name": "short", "match": {"namespaces": ["team-b"]}, "idleWindow": "10m"}],
        }
    )


def test_a_workload_scaled_through_our_keda_signal_is_reported_and_never_patched(
    settings: Settings,
) -> None:
    idle = a_workload("team-a", "rc").gpu_pod("rc-w").build()
    address = SCALER.format(port=settings.keda.port)
    cluster = FakeCluster(workloads=[idle], scaled_objects=[scaled_object("team-a", "rc", address)])
    fleet = usage().gpu("team-a", "rc-w", peak=0.0, last_busy=minutes_ago(300)).build()
    metrics = FakeMetrics(fleet)
    service = build_service(
        settings,
        cluster=cluster,
        shared=in_memory_shared(cluster),
        metrics=metrics,
        clock=FakeClock(NOW),
        logger=logging.getLogger("t"),
    )
    snapshot = service.reconciler.run_once()
    row = snapshot.find(WorkloadRef("team-a", "rc"))
    assert row is not None
    assert row.decision.state is State.KEDA_MANAGED
    assert row.decision.action is Action.NONE
    assert cluster.deactivated() == []
    # the policy's window and the "short" rule's; the breaker's baseline reads the past besides
    assert len([read for read in metrics.reads if read[2] == NOW]) == 2
    assert set(snapshot.usage) == {"default", "short"}


def test_the_keda_scaler_answers_from_the_snapshot_the_loop_published(settings: Settings) -> None:
    idle = a_workload("team-a", "rc").gpu_pod("rc-w").build()
    cluster = FakeCluster(workloads=[idle])
    fleet = usage().gpu("team-a", "rc-w", peak=0.0, last_busy=minutes_ago(300)).build()
    service = build_service(
        settings,
        cluster=cluster,
        shared=in_memory_shared(cluster),
        metrics=FakeMetrics(fleet),
        clock=FakeClock(NOW),
        logger=logging.getLogger("t"),
        bind_host="127.0.0.1",
    )
    for server in service.servers:
        server.start()
    try:
        service.reconciler.run_once()
        with grpc.insecure_channel(f"127.0.0.1:{settings.keda.port}") as channel:
            stub = pb_grpc.ExternalScalerStub(channel)
            ref = pb.ScaledObjectRef(
                name="rc-idle",
                namespace="team-a",
                scalerMetadata={"namespace": "team-a", "workload": "rc"},
            )
            answer = stub.IsActive(ref, timeout=5)
    finally:
        for server in service.servers:
            server.stop()
    assert answer.result is False  # idle for the whole window


class CrashingCluster(FakeCluster):
    """A bug, not an outage: an exception no adapter translates into a ClusterError."""

    def list_workloads(self) -> Sequence[WorkloadInfo]:
        raise RuntimeError("a bug in the cycle")


def test_a_crashed_cycle_reaches_the_errors_metric_and_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = Settings.model_validate({"loop": {"interval": "1h"}})  # the first run only
    crashing = CrashingCluster(workloads=[])
    service = build_service(
        settings,
        cluster=crashing,
        shared=in_memory_shared(crashing),
        metrics=FakeMetrics(usage().build()),
        clock=FakeClock(NOW),
        logger=logging.getLogger("tests.crash"),
    )
    errors = service.telemetry.registry.get_sample_value

    with caplog.at_level(logging.ERROR, logger="tests.crash"):
        service.start()
        try:
            deadline = time.monotonic() + 10
            while service.loop.crashes == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            service.stop()

    assert errors(f"{PREFIX}errors_total", {"source": LOOP_CRASH}) == 1
    [crash] = [r for r in caplog.records if r.name == "tests.crash.loop"]
    assert "reconcile cycle crashed" in crash.getMessage()
    assert crash.exc_info is not None and "a bug in the cycle" in str(crash.exc_info[1])


def test_a_prometheus_source_tells_the_service_metrics_which_slots_it_read() -> None:
    settings = Settings()
    source = PrometheusMetricSource(prometheus=settings.prometheus, policy=settings.policy)
    cluster = FakeCluster(workloads=[])
    service = build_service(
        settings,
        cluster=cluster,
        shared=in_memory_shared(cluster),
        metrics=source,
        clock=FakeClock(NOW),
        logger=logging.getLogger("tests.usage-source"),
    )
    try:
        assert source.slots.observer is not None
        source.slots.observer(source="raw", fallback="stale", raw_gpus=0)
        value = service.telemetry.registry.get_sample_value
        assert value(PREFIX + "usage_source", {"source": "raw"}) == 1.0
        assert value(PREFIX + "usage_source_fallbacks_total", {"reason": "stale"}) == 1.0
    finally:
        source.close()
