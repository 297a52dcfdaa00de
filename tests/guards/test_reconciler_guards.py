"""The reconcile pass with guards, over fakes: each guard holds back what it must, and the
durable audit record comes before every patch."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry

from autoscaler.core.errors import ClusterUnavailable
from autoscaler.domain.audit.records import AuditRecord
from autoscaler.domain.guards.screen import Deed, GuardMemory, LoopRecord
from autoscaler.domain.models import Action, State
from autoscaler.domain.outcomes import Outcome, OutcomeKind
from autoscaler.domain.usage.fresh import LatestSample
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.engine.listeners.loop_audit import LoopAuditor
from autoscaler.engine.metrics.telemetry import ServiceMetrics
from tests.guards.fleet import Gpu, GuardedFleet, ref
from tests.support.evidence_builders import evidence

IDLE = ref("idle-0")


def test_the_durable_audit_record_is_written_before_the_patch_and_the_owners_annotations() -> None:
    fleet = GuardedFleet.of(idle=1)
    snapshot = fleet.cycle()
    calls = [name for name, target in fleet.cluster.calls if target == IDLE]
    # the record first; once the patch succeeded, its settling to done
    assert calls == ["get_workload", "audit", "deactivate", "annotate_owner", "announce", "audit"]
    assert fleet.audit.deeds() == [("deactivate", IDLE, "done")]
    [record] = fleet.audit.records
    assert (record.deed, record.outcome, record.peak, record.threshold) == (
        Deed.DEACTIVATE,
        None,  # the deed itself: begun
        pytest.approx(0.01),
        0.05,
    )
    [action] = snapshot.actions
    assert (action.outcome, action.audited) == (Outcome.done(), True)


def test_without_a_durable_record_nothing_is_patched() -> None:
    fleet = GuardedFleet.of(idle=1)
    fleet.audit.fail_writes = ClusterUnavailable("configmap write refused")
    snapshot = fleet.cycle()
    assert fleet.deactivated() == []
    outcome = snapshot.actions[0].outcome
    assert outcome.kind is OutcomeKind.FAILED
    assert outcome.detail.startswith("audit record not written")


def test_a_failed_patch_is_recorded_as_failed_and_never_counted_as_undone() -> None:
    fleet = GuardedFleet.of(idle=1)
    fleet.cluster.fail_on_patch = ClusterUnavailable("503")
    first = fleet.cycle()
    assert first.actions[0].outcome == Outcome.failed("503")
    assert fleet.audit.deeds() == [
        ("deactivate", IDLE, "started"),
        ("deactivate", IDLE, "failed: 503"),
    ]
    fleet.cluster.fail_on_patch = None
    fleet.cycle()  # still active, but our deactivation never happened: not "undone"
    assert [deed for deed, _, _ in fleet.audit.deeds()].count("undone") == 0
    assert fleet.deactivated() == [IDLE, IDLE]


def test_the_hourly_cap_defers_the_rest_and_survives_a_restart() -> None:
    fleet = GuardedFleet.of(idle=30)
    for _ in range(4):
        fleet.cycle()
    assert len(fleet.deactivated()) == 20
    fleet.restart()  # a new process: the count comes from the durable records
    snapshot = fleet.cycle()
    assert len(fleet.deactivated()) == 20
    assert snapshot.guards is not None
    # All 10 left wait for the hourly cap (the guards run before the per-cycle cap).
    assert (snapshot.guards.deactivations_last_hour, snapshot.guards.deferred) == (20, 10)
    deferred = [r.decision for r in snapshot.workloads if r.decision.action is Action.DEFERRED]
    assert "at most 20 deactivations per hour (20 begun in the last hour)" in deferred[0].reason
    fleet.clock.advance(timedelta(hours=1))
    fleet.cycle()
    assert len(fleet.deactivated()) == 25


def test_the_breaker_opens_on_a_mass_idle_stops_acting_and_announces_it() -> None:
    fleet = GuardedFleet.of(busy=10)
    fleet.cycle()
    for i in range(4):
        fleet.set(f"busy-{i}", Gpu.IDLE_NOW)
    fleet.add("late", Gpu.IDLE_LONG)  # a real candidate appears in the same cycle
    snapshot = fleet.cycle()
    assert fleet.deactivated() == []
    row = snapshot.find(ref("late"))
    assert row is not None and row.decision.action is Action.DEFERRED
    assert "mass-idle circuit breaker open: 4 of 10 workloads" in row.decision.reason
    assert snapshot.guards is not None and snapshot.guards.breaker.open
    assert fleet.state.memory.breaker.open, "its state is durable"
    assert [reason for reason, _ in fleet.state.announced] == ["MassIdleBreakerOpened"]


def open_breaker() -> GuardedFleet:
    """Ten busy workloads, four of which stop at once in the second cycle."""
    fleet = GuardedFleet.of(busy=10)
    fleet.cycle()
    for i in range(4):
        fleet.set(f"busy-{i}", Gpu.IDLE_NOW)
    fleet.add("late", Gpu.IDLE_LONG)
    assert fleet.cycle().guards.breaker.open  # type: ignore[union-attr]
    return fleet


def test_the_breaker_closes_after_three_normal_cycles_and_acting_resumes() -> None:
    fleet = open_breaker()
    counts = []
    for _ in range(3):
        snapshot = fleet.cycle()
        assert snapshot.guards is not None
        counts.append((snapshot.guards.breaker.open, snapshot.guards.breaker.normal_cycles))
    assert counts == [(True, 1), (True, 2), (False, 0)]
    assert fleet.deactivated() == [ref("late")], "it acts in the cycle that closes it"
    assert [reason for reason, _ in fleet.state.announced] == [
        "MassIdleBreakerOpened",
        "MassIdleBreakerClosed",
    ]


def test_another_mass_idle_while_open_starts_the_count_again() -> None:
    fleet = open_breaker()
    fleet.cycle()
    for i in range(4, 8):
        fleet.set(f"busy-{i}", Gpu.SILENT)  # series vanishing counts as well
    snapshot = fleet.cycle()
    assert snapshot.guards is not None
    assert (snapshot.guards.breaker.open, snapshot.guards.breaker.normal_cycles) == (True, 0)


def test_a_restart_keeps_the_breaker_open() -> None:
    fleet = open_breaker()
    fleet.restart()
    snapshot = fleet.cycle()
    assert snapshot.guards is not None and snapshot.guards.breaker.open
    assert fleet.deactivated() == []


def test_after_a_restart_last_cycles_busy_workloads_come_from_prometheus_history() -> None:
    fleet = GuardedFleet.of(busy=10)
    fleet.cycle()
    fleet.metrics.history = fleet.usage_at(fleet.clock.now() - timedelta(minutes=1)).build(
        evaluated_at=fleet.clock.now() - timedelta(minutes=1)
    )  # what Prometheus remembers: all ten busy
    for i in range(4):
        fleet.set(f"busy-{i}", Gpu.IDLE_NOW)  # ... and the process restarts right then
    fleet.restart()
    reads_before = len(fleet.metrics.reads)
    snapshot = fleet.cycle()
    assert snapshot.guards is not None and snapshot.guards.breaker.open
    assert len(fleet.metrics.reads) == reads_before + 2, "one extra read, for the baseline"
    assert fleet.metrics.reads[-1][2] == snapshot.taken_at - timedelta(minutes=1)
    fleet.cycle()
    assert len(fleet.metrics.reads) == reads_before + 3, "only on the first cycle"


def test_an_admin_reset_closes_it_at_the_next_cycle() -> None:
    fleet = open_breaker()
    fleet.state.memory = GuardMemory()  # what POST /api/v1/breaker/reset writes
    snapshot = fleet.cycle()
    assert snapshot.guards is not None and not snapshot.guards.breaker.open
    assert fleet.deactivated() == [ref("late")]


def test_a_metrics_outage_neither_trips_the_breaker_nor_counts_as_normal() -> None:
    fleet = open_breaker()
    fleet.gpus = dict.fromkeys(fleet.gpus, Gpu.SILENT)
    failing = fleet.usage_at(fleet.clock.now()).failing("Prometheus down")
    fleet.usage_at = lambda now: failing  # type: ignore[method-assign]
    snapshot = fleet.cycle()
    assert snapshot.guards is not None
    assert (snapshot.guards.breaker.open, snapshot.guards.breaker.normal_cycles) == (True, 0)


def test_the_fresh_check_leaves_alone_a_candidate_busy_again_in_one_query() -> None:
    fleet = GuardedFleet.of(idle=3)
    busy_now = LatestSample(GpuKey("team-a", "idle-1-w", "GPU-idle-1-w-0"), 0.7, fleet.clock.now())
    fleet.metrics.latest[("team-a", "idle-1-w")] = (busy_now,)
    fleet.metrics.latest[("team-a", "idle-2-w")] = ()  # its series is gone
    snapshot = fleet.cycle()
    assert fleet.metrics.latest_reads == [
        (("team-a", "idle-0-w"), ("team-a", "idle-1-w"), ("team-a", "idle-2-w"))
    ]
    assert fleet.deactivated() == [ref("idle-0")]
    outcomes = {a.workload.name: a.outcome for a in snapshot.actions}
    assert outcomes["idle-1"].kind is OutcomeKind.SKIPPED
    assert outcomes["idle-1"].detail.startswith("fresh check: busy again")
    assert "fewer GPU series" in outcomes["idle-2"].detail


def test_the_fresh_check_leaves_alone_a_candidate_whose_ray_tasks_run_again() -> None:
    fleet = GuardedFleet.of(idle=2)
    now = fleet.clock.now()
    fleet.metrics.latest_evidence = (
        evidence().ray_tasks("team-a", "idle-1-w", since=now, until=now).build()
    )
    snapshot = fleet.cycle()
    assert fleet.deactivated() == [ref("idle-0")]
    outcomes = {a.workload.name: a.outcome for a in snapshot.actions}
    assert outcomes["idle-1"] == Outcome.skipped(
        "fresh check: Ray tasks executing again (3 Ray tasks running)"
    )


def test_loading_that_begins_at_the_last_moment_holds_back_the_candidate() -> None:
    # Idle for the whole window with no loading seen: loading first seen in the fresh check
    # starts an episode of its own, which counts for maxLoading from now.
    fleet = GuardedFleet.of(idle=2)
    now = fleet.clock.now()
    fleet.metrics.latest_evidence = (
        evidence().framebuffer("team-a", "idle-1-w", uuid="GPU-idle-1-w-0", since=now).build()
    )
    snapshot = fleet.cycle()
    assert fleet.deactivated() == [ref("idle-0")]
    outcomes = {a.workload.name: a.outcome for a in snapshot.actions}
    assert outcomes["idle-1"].kind is OutcomeKind.SKIPPED
    assert outcomes["idle-1"].detail.startswith("fresh check: loading again")


def test_a_failed_fresh_check_leaves_every_candidate_alone() -> None:
    fleet = GuardedFleet.of(idle=2)
    fleet.metrics.latest_failure = "Prometheus did not answer in time"
    snapshot = fleet.cycle()
    assert fleet.deactivated() == []
    assert {a.outcome for a in snapshot.actions} == {
        Outcome.skipped("fresh check failed: Prometheus did not answer in time")
    }


def test_unreadable_guard_state_acts_on_nothing_and_says_so() -> None:
    fleet = GuardedFleet.of(idle=2)
    fleet.state.fail = ClusterUnavailable("configmap read timed out")
    snapshot = fleet.cycle()
    assert fleet.deactivated() == []
    assert snapshot.guards is not None
    assert "guard state unreadable" in snapshot.guards.problems[0]
    assert {r.decision.action for r in snapshot.workloads} == {Action.DEFERRED}


def test_a_workload_set_back_to_active_again_and_again_is_contested_then_left_alone() -> None:
    fleet = GuardedFleet.of(idle=1)
    for _ in range(3):
        fleet.cycle()  # deactivated ...
        fleet.reactivate("idle-0")  # ... and set back at once
    snapshot = fleet.cycle()
    assert fleet.deactivated() == [IDLE, IDLE, IDLE]
    row = snapshot.find(IDLE)
    assert row is not None and row.decision.action is Action.NONE
    assert row.decision.state is State.IDLE
    assert row.decision.reason.startswith("contested: our deactivation was undone 3 times")
    assert snapshot.guards is not None and snapshot.guards.contested == (IDLE,)
    assert IDLE in fleet.state.memory.contested
    assert [d for d, _, _ in fleet.audit.deeds()].count("undone") == 3
    fleet.cycle()
    assert len(fleet.deactivated()) == 3, "left alone until an admin decides"


def test_an_admin_clearing_the_mark_lets_the_loop_act_and_count_afresh() -> None:
    fleet = GuardedFleet.of(idle=1)
    for _ in range(3):
        fleet.cycle()
        fleet.reactivate("idle-0")
    fleet.cycle()
    fleet.state.memory = GuardMemory()  # DELETE .../contested removes the mark ...
    fleet.audit.record(LoopRecord(fleet.clock.now(), Deed.UNCONTESTED, IDLE))  # ... and this
    fleet.cycle()
    assert len(fleet.deactivated()) == 4
    assert fleet.state.memory.contested == {}


def test_in_dry_run_an_open_breaker_shows_what_it_would_hold_back() -> None:
    fleet = GuardedFleet.of(busy=10, dry_run=True)
    fleet.cycle()
    for i in range(4):
        fleet.set(f"busy-{i}", Gpu.IDLE_NOW)
    fleet.add("late", Gpu.IDLE_LONG)
    snapshot = fleet.cycle()
    row = snapshot.find(ref("late"))
    assert row is not None and row.decision.action is Action.DEFERRED
    assert fleet.audit.records == []


def test_without_anything_to_do_a_steady_cycle_writes_nothing() -> None:
    fleet = GuardedFleet.of(busy=5)
    for _ in range(3):
        fleet.cycle()
    assert (fleet.audit.writes, fleet.state.changes, fleet.state.announced) == (0, 0, [])


def test_the_api_auditor_does_not_record_the_loops_action_a_second_time() -> None:
    written: list[AuditRecord] = []

    class Sink:
        def record(self, *records: AuditRecord) -> None:
            written.extend(records)

    fleet = GuardedFleet.of(idle=2)
    fleet.metrics.latest[("team-a", "idle-1-w")] = ()  # skipped by the fresh check
    metrics = ServiceMetrics(CollectorRegistry(), clock=fleet.clock)
    fleet.store.subscribe(LoopAuditor(audit=Sink(), metrics=metrics, logger=logging.getLogger()))
    fleet.cycle()
    assert [(r.target, r.outcome[:7]) for r in written] == [("team-a/idle-1", "skipped")]
    assert [(d, w) for d, w, _ in fleet.audit.deeds()] == [("deactivate", IDLE)]


def test_a_replica_that_does_not_lead_sees_the_breaker_open_but_writes_nothing() -> None:
    fleet = GuardedFleet.of(busy=10, leads=False)
    fleet.cycle()
    for i in range(4):
        fleet.set(f"busy-{i}", Gpu.IDLE_NOW)
    snapshot = fleet.cycle()
    assert snapshot.guards is not None and snapshot.guards.breaker.open
    assert (fleet.state.changes, fleet.state.announced, fleet.audit.writes) == (0, [], 0)
    fleet.leads = True  # a failover: the new leader's baseline is already warm
    for i in range(4, 9):  # five of the six still busy stop at once
        fleet.set(f"busy-{i}", Gpu.IDLE_NOW)
    assert fleet.cycle().guards.breaker.open  # type: ignore[union-attr]
    assert fleet.state.memory.breaker.open
