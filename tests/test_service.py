"""The reconcile pass over fakes at our ports: what it reads, decides, does and publishes."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from autoscaler.core.errors import AnswerLost, ClusterUnavailable, Conflict, NotFound
from autoscaler.domain.models import DEFAULT_PROFILE, Action, Pauses, State, WorkloadRef
from autoscaler.domain.outcomes import Outcome, OutcomeKind
from autoscaler.domain.policy.rules import Rule, Selector
from autoscaler.domain.usage.idleness import UsageRules
from autoscaler.engine.cycle.reconciler import Reconciler
from autoscaler.engine.cycle.snapshots import SnapshotStore
from tests.support.domain_builders import NOW, a_policy, a_workload, minutes_ago, usage, with_scoped
from tests.support.fakes import FakeAuditLog, FakeClock, FakeCluster, FakeMetrics
from tests.support.loop_builders import a_loop, a_screen

IDLE = WorkloadRef("team-a", "idle-rc")
BUSY = WorkloadRef("team-a", "busy-rc")


def fleet_cluster() -> FakeCluster:
    return FakeCluster(
        workloads=[
            a_workload("team-a", "idle-rc").cpu_pod("head").gpu_pod("idle-w").build(),
            a_workload("team-a", "busy-rc").gpu_pod("busy-w").build(),
        ]
    )


def fleet_metrics() -> FakeMetrics:
    fleet = (
        usage()
        .gpu("team-a", "idle-w", peak=0.01, last_busy=minutes_ago(120))
        .gpu("team-a", "busy-w", peak=0.9, last_busy=NOW)
        .build()
    )
    return FakeMetrics(fleet)


def reconciler(
    cluster: FakeCluster,
    metrics: FakeMetrics,
    *,
    dry_run: bool = False,
    store: SnapshotStore | None = None,
    rules: tuple[Rule, ...] = (),
) -> Reconciler:
    policy = with_scoped(a_policy(dry_run=dry_run), *rules)
    return a_loop(
        cluster,
        metrics,
        actuator=cluster,
        policy=policy,
        clock=FakeClock(NOW),
        publish=(store or SnapshotStore()).publish,
        logger=logging.getLogger("test"),
        # The breaker's baseline read after a start is the screen's own, not counted here.
        screen=a_screen(metrics=fleet_metrics(), policy=policy, audit=FakeAuditLog()),
    )


def test_an_idle_workload_is_audited_then_deactivated_then_announced() -> None:
    cluster = fleet_cluster()
    snapshot = reconciler(cluster, fleet_metrics()).run_once()
    idle_calls = [name for name, ref in cluster.calls if ref == IDLE]
    assert idle_calls == ["get_workload", "deactivate", "annotate_owner", "announce"]
    assert cluster.deactivated() == [IDLE]
    row = snapshot.find(IDLE)
    assert row is not None
    assert row.decision.action is Action.DEACTIVATE
    assert [(a.workload, a.outcome) for a in snapshot.actions] == [(IDLE, Outcome.done())]
    audit = cluster.audits[0][1]
    assert audit.peak == pytest.approx(0.01)
    assert audit.threshold == pytest.approx(0.05)


def test_dry_run_decides_and_reports_but_patches_nothing() -> None:
    cluster = fleet_cluster()
    snapshot = reconciler(cluster, fleet_metrics(), dry_run=True).run_once()
    assert cluster.deactivated() == []
    row = snapshot.find(IDLE)
    assert row is not None
    assert row.decision.action is Action.WOULD_DEACTIVATE
    assert snapshot.dry_run is True


def test_the_number_of_metric_reads_is_one_per_profile_whatever_the_fleet_size() -> None:
    small, large = fleet_cluster(), fleet_cluster()
    large.workloads = large.workloads * 50
    short = UsageRules(0.1, timedelta(minutes=10), timedelta(minutes=1), 0.8, timedelta(minutes=3))
    # A second rule, with a window and threshold of its own, that no workload falls under.
    extra = Rule(
        "short", usage=short, grace_period=timedelta(0), selector=Selector(namespaces=("nowhere",))
    )
    for cluster in (small, large):
        metrics = fleet_metrics()
        snapshot = reconciler(cluster, metrics, dry_run=True, rules=(extra,)).run_once()
        assert len(metrics.reads) == 2
        assert set(snapshot.usage) == {DEFAULT_PROFILE, "short"}


def test_a_workload_exempted_since_the_cycle_began_is_left_alone() -> None:
    cluster = fleet_cluster()
    exempted = a_workload("team-a", "idle-rc").cpu_pod("head").gpu_pod("idle-w").exempt()
    cluster.fresh[IDLE] = exempted.build()
    snapshot = reconciler(cluster, fleet_metrics()).run_once()
    assert cluster.deactivated() == []
    assert [a.outcome for a in snapshot.actions] == [Outcome.skipped("now exempt")]


def test_a_workload_deleted_since_the_cycle_began_is_skipped() -> None:
    cluster = fleet_cluster()
    cluster.fresh[IDLE] = None
    snapshot = reconciler(cluster, fleet_metrics()).run_once()
    assert cluster.deactivated() == []
    assert snapshot.actions[0].outcome == Outcome.skipped("workload is gone")


def test_a_pause_set_during_the_cycle_stops_the_action() -> None:
    cluster = fleet_cluster()
    cluster.pauses_after_first_read = Pauses(everything=True)
    snapshot = reconciler(cluster, fleet_metrics()).run_once()
    assert cluster.deactivated() == []
    assert snapshot.actions[0].outcome == Outcome.skipped("now paused")


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        pytest.param(NotFound("gone"), OutcomeKind.SKIPPED, id="404-skips"),
        pytest.param(Conflict("changed"), OutcomeKind.SKIPPED, id="409-skips"),
        pytest.param(ClusterUnavailable("503"), OutcomeKind.FAILED, id="5xx-fails"),
        pytest.param(AnswerLost("timed out"), OutcomeKind.UNKNOWN, id="lost-answer-is-unknown"),
    ],
)
def test_a_failed_patch_is_reported_and_the_cycle_goes_on(
    error: Exception, kind: OutcomeKind
) -> None:
    cluster = fleet_cluster()
    cluster.fail_on_patch = error
    snapshot = reconciler(cluster, fleet_metrics()).run_once()
    outcome = snapshot.actions[0].outcome
    assert outcome.kind is kind
    assert str(error) in outcome.detail
    assert ("announce", IDLE) not in cluster.calls


def test_a_cluster_outage_acts_on_nothing_and_keeps_rows_as_unknown() -> None:
    cluster = fleet_cluster()
    store = SnapshotStore()
    loop = reconciler(cluster, fleet_metrics(), dry_run=True, store=store)
    loop.run_once()
    cluster.fail = ClusterUnavailable("connection refused")
    snapshot = loop.run_once()
    assert snapshot.cluster_ok is False
    assert {row.decision.state for row in snapshot.workloads} == {State.UNKNOWN}
    assert "connection refused" in snapshot.errors[0]
    assert store.latest() is snapshot


def test_a_metrics_outage_makes_everything_unknown_and_deactivates_nothing() -> None:
    cluster = fleet_cluster()
    metrics = FakeMetrics(usage().failing("timed out").build())
    snapshot = reconciler(cluster, metrics).run_once()
    assert cluster.deactivated() == []
    assert snapshot.metrics_ok is False
    states = {row.ref: row.decision.state for row in snapshot.workloads}
    assert states == {IDLE: State.UNKNOWN, BUSY: State.UNKNOWN}


def test_each_cycle_publishes_a_new_snapshot_to_subscribers() -> None:
    store = SnapshotStore()
    seen: list[int] = []
    unsubscribe = store.subscribe(lambda snapshot: seen.append(snapshot.cycle))
    loop = reconciler(fleet_cluster(), fleet_metrics(), dry_run=True, store=store)
    loop.run_once()
    loop.run_once()
    unsubscribe()
    loop.run_once()
    assert seen == [1, 2]


def test_a_replica_that_does_not_lead_decides_and_publishes_but_patches_nothing() -> None:
    cluster = fleet_cluster()
    loop = a_loop(
        cluster,
        fleet_metrics(),
        actuator=cluster,
        policy=a_policy(),
        clock=FakeClock(NOW),
        publish=SnapshotStore().publish,
        logger=logging.getLogger("test"),
        leads=lambda: False,
    )
    snapshot = loop.run_once()
    assert cluster.deactivated() == []
    assert snapshot.actions == ()
    row = snapshot.find(IDLE)
    assert row is not None and row.decision.action is Action.DEACTIVATE


def test_a_leader_that_loses_its_lease_mid_cycle_stops_before_the_next_patch() -> None:
    cluster = FakeCluster(
        [a_workload("team-a", f"rc-{i}").gpu_pod(f"w-{i}").build() for i in range(3)]
    )
    fleet = usage()
    for i in range(3):
        fleet.gpu("team-a", f"w-{i}", peak=0.01, last_busy=minutes_ago(120))
    # the screen, the act steps, the stops, each patch
    answers = iter([True, True, True, True, False, False])
    loop = a_loop(
        cluster,
        FakeMetrics(fleet.build()),
        actuator=cluster,
        policy=a_policy(),
        clock=FakeClock(NOW),
        publish=SnapshotStore().publish,
        logger=logging.getLogger("test"),
        leads=lambda: next(answers),
    )
    snapshot = loop.run_once()
    assert len(cluster.deactivated()) == 1
    assert [a.outcome for a in snapshot.actions][1:] == [
        Outcome.skipped("no longer the leader")
    ] * 2


def test_a_not_running_stop_is_audited_with_the_not_running_limit_not_the_idle_numbers() -> None:
    stuck = (
        a_workload("team-a", "stuck-rc")
        .admitted(at=minutes_ago(45))
        .cpu_pod("head")
        .waiting_pod("stuck-w", "ImagePullBackOff", image="ghcr.io/x:v2")
        .read_by_kueue()
        .build()
    )
    cluster = FakeCluster(workloads=[stuck])

    reconciler(cluster, FakeMetrics(usage().build())).run_once()

    [(ref, audit)] = cluster.audits
    assert ref == WorkloadRef("team-a", "stuck-rc")
    assert audit.policy == "rule default: not running after 0:30:00, grace 0:15:00"
