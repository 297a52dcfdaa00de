"""The service's metrics, fed snapshot by snapshot, read from the registry they were given."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry

from autoscaler.domain.guards.breaker import CLOSED, BreakerState
from autoscaler.domain.models import (
    Action,
    ActionRecord,
    Decision,
    GuardReport,
    Snapshot,
    State,
    WorkloadInfo,
    WorkloadStatus,
)
from autoscaler.domain.outcomes import Outcome
from autoscaler.engine.metrics.telemetry import ServiceMetrics
from tests.support.domain_builders import A_DEFAULT_RULE, NOW, a_workload
from tests.support.fakes import FakeClock


def row(
    workload: WorkloadInfo, state: State, *, gpus: int = 0, action: Action = Action.NONE
) -> WorkloadStatus:
    return WorkloadStatus(
        workload, Decision(workload.ref, state, action, "test", gpus=gpus, rule=A_DEFAULT_RULE)
    )


def waiting(count: int) -> tuple[WorkloadStatus, ...]:
    """`count` idle workloads whose deactivation was deferred this cycle."""
    return tuple(
        row(a_workload("team-b", f"rc-{n}").build(), State.IDLE, action=Action.DEFERRED)
        for n in range(count)
    )


def guard_report(**changes: object) -> GuardReport:
    base = GuardReport(
        breaker=CLOSED,
        breaker_close_after=3,
        hourly_limit=20,
        deactivations_last_hour=0,
        deferred=0,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


OPEN = BreakerState(open=True, since=NOW, reason="5 of 10 busy workloads turned idle at once")


def snapshot(*rows: WorkloadStatus, at: timedelta = timedelta(0), **changes: object) -> Snapshot:
    base = Snapshot(
        cycle=1, taken_at=NOW + at, workloads=rows, cluster_ok=True, metrics_ok=True, dry_run=False
    )
    return replace(base, **changes)  # type: ignore[arg-type]


class Rig:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.clock = FakeClock(NOW)
        self.metrics = ServiceMetrics(self.registry, clock=self.clock)

    def value(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)


@pytest.fixture
def rig() -> Rig:
    return Rig()


IDLE = a_workload("team-a", "idle-rc").gpu_pod("w", gpus=2).build()
GONE = replace(IDLE, active=False, pods=())


def test_each_snapshot_counts_a_cycle_and_its_duration_from_the_loop_clock(rig: Rig) -> None:
    rig.clock.advance(timedelta(seconds=3))
    rig.metrics.observe(snapshot())
    assert rig.value("idle_gpu_autoscaler_cycles_total") == 1
    assert rig.value("idle_gpu_autoscaler_cycle_duration_seconds_sum") == 3
    assert rig.value("idle_gpu_autoscaler_last_successful_cycle_timestamp_seconds") == (
        NOW.timestamp()
    )


def test_workloads_are_counted_by_state_with_absent_states_at_zero(rig: Rig) -> None:
    busy = a_workload("team-a", "busy").build()
    rig.metrics.observe(snapshot(row(IDLE, State.IDLE), row(busy, State.BUSY)))
    assert rig.value("idle_gpu_autoscaler_workloads", state="idle") == 1
    assert rig.value("idle_gpu_autoscaler_workloads", state="busy") == 1
    assert rig.value("idle_gpu_autoscaler_workloads", state="paused") == 0


def test_a_done_deactivation_is_counted_and_its_gpus_accrue_reclaimed_hours(rig: Rig) -> None:
    done = ActionRecord(IDLE.ref, Action.DEACTIVATE, "idle", NOW, Outcome.done())
    rig.metrics.observe(snapshot(row(IDLE, State.IDLE, gpus=2), actions=(done,)))
    assert (
        rig.value("idle_gpu_autoscaler_deactivations_total", namespace="team-a", reason="idle") == 1
    )
    rig.metrics.observe(snapshot(row(GONE, State.DEACTIVATED), at=timedelta(minutes=30)))
    rig.metrics.observe(snapshot(row(GONE, State.DEACTIVATED), at=timedelta(minutes=90)))
    assert rig.value(
        "idle_gpu_autoscaler_gpu_hours_reclaimed_total", namespace="team-a"
    ) == pytest.approx(3.0)


def test_a_workload_seen_active_again_is_a_reactivation_and_stops_accruing(rig: Rig) -> None:
    rig.metrics.deactivated(IDLE.ref, gpus=1, reason="admin", at=NOW)
    rig.metrics.observe(snapshot(row(GONE, State.DEACTIVATED), at=timedelta(hours=1)))
    rig.metrics.observe(snapshot(row(IDLE, State.GRACE), at=timedelta(hours=2)))
    rig.metrics.observe(snapshot(row(IDLE, State.GRACE), at=timedelta(hours=3)))
    assert rig.value("idle_gpu_autoscaler_reactivations_total") == 1
    assert rig.value(
        "idle_gpu_autoscaler_gpu_hours_reclaimed_total", namespace="team-a"
    ) == pytest.approx(1.0)


def test_failures_are_counted_by_source(rig: Rig) -> None:
    failed = ActionRecord(IDLE.ref, Action.DEACTIVATE, "idle", NOW, Outcome.failed("500"))
    rig.metrics.observe(snapshot(metrics_ok=False, actions=(failed,)))
    rig.metrics.observe(snapshot(cluster_ok=False))
    for source in ("prometheus", "action", "cluster"):
        assert rig.value("idle_gpu_autoscaler_errors_total", source=source) == 1
    assert rig.value("idle_gpu_autoscaler_last_successful_cycle_timestamp_seconds") == 0


def test_exemptions_in_force_are_counted(rig: Rig) -> None:
    exempt = a_workload("team-a", "x").exempt_until(NOW + timedelta(hours=1), on_owner=True)
    expired = a_workload("team-a", "y").exempt_until(NOW - timedelta(hours=1))
    rig.metrics.observe(
        snapshot(row(exempt.build(), State.EXEMPT), row(expired.build(), State.IDLE))
    )
    assert rig.value("idle_gpu_autoscaler_exemptions_active") == 1


REASONS = ("per_cycle_cap", "per_hour_cap", "breaker", "guard_state_unreadable")


def deferred_by_reason(rig: Rig) -> dict[str, float | None]:
    return {
        reason: rig.value("idle_gpu_autoscaler_deactivations_deferred", reason=reason)
        for reason in REASONS
    }


@pytest.mark.parametrize(
    ("waiting_rows", "report", "expected"),
    [
        pytest.param(
            3, None, {"per_cycle_cap": 3}, id="without-guards-only-the-per-cycle-cap-defers"
        ),
        pytest.param(
            5,
            guard_report(deferred=2),
            {"per_cycle_cap": 3, "per_hour_cap": 2},
            id="hourly-cap-defers-what-the-cycle-cap-let-through",
        ),
        pytest.param(
            7,
            guard_report(breaker=OPEN, deferred=5),
            {"per_cycle_cap": 2, "breaker": 5},
            id="open-breaker-defers-everything-the-cycle-cap-let-through",
        ),
        pytest.param(
            5,
            guard_report(breaker=OPEN, deferred=5, problems=("guard state unreadable",)),
            {"guard_state_unreadable": 5},
            id="unreadable-guard-state-is-its-own-reason-even-with-an-open-breaker",
        ),
    ],
)
def test_deferred_deactivations_are_counted_by_the_reason_they_wait(
    rig: Rig, waiting_rows: int, report: GuardReport | None, expected: dict[str, int]
) -> None:
    rig.metrics.observe(snapshot(*waiting(waiting_rows), guards=report))
    assert deferred_by_reason(rig) == {reason: expected.get(reason, 0) for reason in REASONS}


def test_the_breaker_gauge_follows_the_breaker_open_and_closed(rig: Rig) -> None:
    rig.metrics.observe(snapshot(guards=guard_report(breaker=OPEN)))
    assert rig.value("idle_gpu_autoscaler_breaker_open") == 1
    rig.metrics.observe(snapshot(guards=guard_report()))
    assert rig.value("idle_gpu_autoscaler_breaker_open") == 0


def test_the_hourly_count_its_limit_and_contested_workloads_are_reported(rig: Rig) -> None:
    contested = (IDLE.ref, a_workload("team-b", "gitops").build().ref)
    report = guard_report(hourly_limit=8, deactivations_last_hour=6, contested=contested)
    rig.metrics.observe(snapshot(guards=report))
    assert rig.value("idle_gpu_autoscaler_deactivations_last_hour") == 6
    assert rig.value("idle_gpu_autoscaler_deactivations_hourly_limit") == 8
    assert rig.value("idle_gpu_autoscaler_contested_workloads") == 2


def test_a_cycle_that_missed_the_cluster_keeps_the_last_guard_figures(rig: Rig) -> None:
    rig.metrics.observe(snapshot(*waiting(2), guards=guard_report(breaker=OPEN, deferred=2)))
    rig.metrics.observe(snapshot(cluster_ok=False))
    assert rig.value("idle_gpu_autoscaler_breaker_open") == 1
    assert deferred_by_reason(rig)["breaker"] == 2
