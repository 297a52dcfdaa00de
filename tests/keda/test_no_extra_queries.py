"""However many ScaledObjects call, Prometheus and Kubernetes see only the loop's own reads."""

from __future__ import annotations

import logging
from datetime import timedelta

from autoscaler.domain.policy.rules import Rule, Selector
from autoscaler.domain.usage.idleness import UsageRules
from autoscaler.keda import externalscaler_pb2 as pb
from tests.keda.rig import DEADLINE, running_scaler, stub_for
from tests.support.domain_builders import HOUR, NOW, a_policy, a_workload, usage, with_scoped
from tests.support.fakes import FakeAuditLog, FakeClock, FakeCluster, FakeMetrics
from tests.support.loop_builders import a_loop, a_screen


def test_a_thousand_keda_calls_add_no_query_to_prometheus_or_the_api_server() -> None:
    workloads = [a_workload("ml", f"rc-{i}").gpu_pod(f"rc-{i}-0").build() for i in range(50)]
    fleet = usage()
    for i in range(50):
        fleet.gpu("ml", f"rc-{i}-0", peak=0.01)
    metrics, cluster = FakeMetrics(fleet.build()), FakeCluster(workloads)
    base = a_policy()
    fast = UsageRules(
        0.1,
        timedelta(minutes=10),
        base.default_rule.usage.slot,
        0.8,
        base.default_rule.usage.stale_after,
    )
    # A rule no workload falls under: a trigger names it in `profile:` for its view.
    nowhere = Selector(namespaces=("nowhere",))
    policy = with_scoped(base, Rule("fast", usage=fast, grace_period=HOUR, selector=nowhere))
    with running_scaler(profiles=("fast",)) as scaler, stub_for(scaler.target) as stub:
        reconciler = a_loop(
            cluster,
            metrics,
            actuator=cluster,
            policy=policy,
            clock=FakeClock(NOW),
            publish=scaler.publish,
            logger=logging.getLogger("test.decisions"),
            # The breaker's baseline read after a start is the screen's own, not counted here.
            screen=a_screen(
                metrics=FakeMetrics(fleet.build()), policy=policy, audit=FakeAuditLog()
            ),
        )
        reconciler.run_once()
        reads, calls = len(metrics.reads), len(cluster.calls)
        stream = stub.StreamIsActive(
            pb.ScaledObjectRef(namespace="ml", scalerMetadata={"workload": "rc-0"})
        )
        for i in range(500):
            ref = pb.ScaledObjectRef(
                namespace="ml", scalerMetadata={"workload": f"rc-{i % 50}", "profile": "fast"}
            )
            assert stub.IsActive(ref, timeout=DEADLINE).result is False  # idle, from the cycle
            stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref), timeout=DEADLINE)
        stream.cancel()
        assert (len(metrics.reads), len(cluster.calls)) == (reads, calls)
        reconciler.run_once()
    assert reads == 2, "one fleet-wide read per profile (default and fast) per cycle"
    assert len(metrics.reads) == 2 * reads
