"""The policy engine replayed over slot series: when it would have acted, and what it freed."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.backtest.command import BacktestOptions, backtest
from autoscaler.backtest.deactivation import Deactivation
from autoscaler.backtest.report import Report
from autoscaler.backtest.variant import Variant
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings

from .fakes import FakeRange, SlotValue

H, M = 3600, 60
T0 = int(datetime(2026, 3, 2, tzinfo=UTC).timestamp())  # the range starts here
END = T0 + 6 * H


def busy_until(at: int, *, back: int | None = None, pct: float = 0.8) -> SlotValue:
    return lambda t: pct if t <= at or (back is not None and t >= back) else 0.0


def options(**changes: object) -> BacktestOptions:
    base = BacktestOptions(
        start=datetime.fromtimestamp(T0, UTC),
        end=datetime.fromtimestamp(END, UTC),
        step=timedelta(minutes=1),
        alternatives=(),
        chart_windows=(),
        horizon=timedelta(hours=2),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def run(
    gpus: dict[tuple[str, str, str], SlotValue], settings: Settings | None = None, **changes: object
) -> Report:
    settings = settings or Settings()
    source = FakeRange(gpus)
    return backtest(
        source, options=options(**changes), settings=settings, policy=build_policy(settings)
    )


def found(report: Report) -> list[Deactivation]:
    return list(report.variants[0].deactivations)


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def test_an_idle_stretch_is_deactivated_once_the_window_has_passed_and_held_until_the_end() -> None:
    report = run({("ns", "rc-head-abcde", "GPU-1"): busy_until(T0 + H)})

    (one,) = found(report)
    assert (one.at, one.until, one.gpus) == (at(T0 + 2 * H), at(END), 1)
    assert (one.came_back, one.regret, one.gpu_hours) == (False, False, 4.0)


def test_activity_back_within_the_horizon_is_a_regret_and_ends_the_reclaimed_hours() -> None:
    report = run({("ns", "rc-head-abcde", "GPU-1"): busy_until(T0 + H, back=T0 + H + 90 * M)})

    (one,) = found(report)
    assert (one.at, one.until) == (at(T0 + 2 * H), at(T0 + H + 90 * M))
    assert (one.came_back, one.regret) == (True, True)


def test_activity_back_after_the_horizon_came_back_but_is_no_regret() -> None:
    gpu = busy_until(T0, back=T0 + 4 * H)
    report = run({("ns", "rc-head-abcde", "GPU-1"): gpu}, horizon=timedelta(hours=2))

    (one,) = found(report)
    assert (one.came_back, one.regret) == (True, False)
    assert one.until - one.at == timedelta(hours=3)


def test_after_coming_back_the_workload_can_be_deactivated_again() -> None:
    def twice(t: int) -> float:
        return 0.9 if t <= T0 or T0 + 2 * H <= t <= T0 + 2 * H + 10 * M else 0.0

    report = run({("ns", "rc-head-abcde", "GPU-1"): twice})

    assert [d.at for d in found(report)] == [at(T0 + H), at(T0 + 3 * H + 10 * M)]


def test_a_deleted_raycluster_frees_its_gpus_when_its_series_stop_not_when_a_namesake_starts() -> (
    None
):
    def deleted_then_recreated(t: int) -> float | None:
        if t <= T0 + 2 * H:
            return 0.9 if t <= T0 else 0.0
        return None if t < T0 + 4 * H else 0.9

    report = run({("ns", "rc-head-abcde", "GPU-1"): deleted_then_recreated})

    (one,) = found(report)
    assert (one.at, one.until, one.came_back) == (at(T0 + H), at(T0 + 2 * H), False)


def test_history_before_the_range_counts_so_a_long_idle_gpu_is_stopped_at_the_first_step() -> None:
    report = run({("ns", "rc-head-abcde", "GPU-1"): lambda t: 0.0})

    assert [d.at for d in found(report)] == [at(T0)]


def test_no_more_than_the_per_cycle_cap_is_deactivated_in_one_step() -> None:
    gpus: dict[tuple[str, str, str], SlotValue] = {
        ("ns", f"rc{i}-head-abcde", f"GPU-{i}"): busy_until(T0 + H) for i in range(7)
    }

    report = run(gpus)

    times = sorted(d.at for d in found(report))
    assert times == [at(T0 + 2 * H)] * 5 + [at(T0 + 2 * H + M)] * 2


def test_decisions_are_made_only_every_step() -> None:
    report = run(
        {("ns", "rc-head-abcde", "GPU-1"): busy_until(T0 + H + 2 * M)}, step=timedelta(minutes=5)
    )

    assert [d.at for d in found(report)] == [at(T0 + 2 * H + 5 * M)]


def test_a_workload_that_appears_mid_range_gets_its_grace_and_its_window() -> None:
    report = run({("ns", "rc-head-abcde", "GPU-1"): lambda t: 0.0 if t >= T0 + H else None})

    assert [d.at for d in found(report)] == [at(T0 + 2 * H)]


def test_an_excluded_namespace_is_never_deactivated() -> None:
    settings = Settings.model_validate({"policy": {"namespaces": {"exclude": ["ns"]}}})

    report = run({("ns", "rc-head-abcde", "GPU-1"): busy_until(T0)}, settings)

    assert found(report) == []


def test_a_gpu_that_never_reports_is_never_idle() -> None:
    report = run({("ns", "rc-head-abcde", "GPU-1"): lambda t: float("nan")})

    assert found(report) == []


@pytest.mark.parametrize("chunk", [timedelta(minutes=7), timedelta(hours=1), timedelta(hours=6)])
def test_the_chunk_size_changes_memory_not_the_figures(chunk: timedelta) -> None:
    def bursty(t: int) -> float:
        return 0.9 if (t // M) % 97 < 3 else 0.0

    gpus: dict[tuple[str, str, str], SlotValue] = {
        ("a", "x-head-abcde", "GPU-1"): busy_until(T0 + H, back=T0 + 3 * H),
        ("a", "x-g-worker-fghij", "GPU-2"): busy_until(T0 + 50 * M),
        ("b", "y-head-abcde", "GPU-3"): bursty,
    }
    variants = (Variant(timedelta(minutes=30), 0.05), Variant(timedelta(hours=2), 0.1))
    whole = run(gpus, chunk=timedelta(hours=12), alternatives=variants)

    sliced = run(gpus, chunk=chunk, alternatives=variants)

    assert [v.deactivations for v in sliced.variants] == [v.deactivations for v in whole.variants]
    assert any(v.deactivations for v in whole.variants)


SLOT_QUERIES = {
    "max_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[60s])",
    'max_over_time(DCGM_FI_DEV_GPU_UTIL{GPU_I_ID=""}[60s])',
}
OWNER_QUERIES = {
    "max_over_time(kube_pod_owner[60s])",
    "max_over_time(kube_replicaset_owner[60s])",
    "max_over_time(kube_job_owner[60s])",
    "max_over_time(kube_pod_labels[60s])",
}
EVIDENCE_QUERIES = {
    "framebuffer": "(DCGM_FI_DEV_FB_USED - DCGM_FI_DEV_FB_USED offset 60s)",
    "pcie": "avg_over_time(DCGM_FI_PROF_PCIE_RX_BYTES[60s])",
    "nvlink": "avg_over_time(DCGM_FI_PROF_NVLINK_RX_BYTES[60s])",
    "power": "avg_over_time(DCGM_FI_DEV_POWER_USAGE[60s])",
}


@pytest.mark.parametrize(
    "enabled",
    [
        pytest.param((), id="no-evidence-signal-only-the-two-slot-queries"),
        pytest.param(("framebuffer",), id="framebuffer-adds-one"),
        pytest.param(("framebuffer", "power"), id="framebuffer-and-power-add-two"),
        pytest.param(tuple(EVIDENCE_QUERIES), id="all-four-device-signals-add-four"),
    ],
)
def test_one_range_query_per_signal_is_sent_per_chunk_whatever_the_fleet(
    enabled: tuple[str, ...],
) -> None:
    gpus: dict[tuple[str, str, str], SlotValue] = {
        ("ns", f"rc{i}-head-abcde", f"GPU-{i}"): busy_until(T0) for i in range(50)
    }
    source = FakeRange(gpus)
    evidence: dict[str, dict[str, object]] = {
        n: {"enabled": n in enabled} for n in EVIDENCE_QUERIES
    }
    # the transfer sections need their metric named (settings/evidence.py has no default there)
    evidence["pcie"]["metric"] = "DCGM_FI_PROF_PCIE_RX_BYTES"
    evidence["nvlink"]["metric"] = "DCGM_FI_PROF_NVLINK_RX_BYTES"
    settings = Settings.model_validate({"prometheus": {"evidence": evidence}})

    backtest(
        source,
        options=options(chunk=timedelta(hours=2)),
        settings=settings,
        policy=build_policy(settings),
    )

    # 6 h of range after a warm-up of the window (1 h) and a slot: 7 h 01 m in 2 h chunks,
    # each asked for both default signals and each enabled evidence signal, the power
    # baseline learned from the power query's own answer (no query of its own), and for
    # kube-state-metrics' four owner series (kube_pod_owner, the ReplicaSet's and Job's owner,
    # kube_pod_labels)
    assert len(source.queries) == 4 * (2 + len(enabled) + 4)
    assert {q[0] for q in source.queries} == SLOT_QUERIES | OWNER_QUERIES | {
        EVIDENCE_QUERIES[e] for e in enabled
    }
