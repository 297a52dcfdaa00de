"""The simulated exporter computes what the real queries would return from the same samples."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.domain.models import FleetUsage, GpuUsage
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.tree import PolicySettings, PrometheusSettings
from autoscaler.sim.metrics import GpuHolding, SimulatedExporter
from autoscaler.sim.pods import gpu_uuid
from autoscaler.sim.profiles import Profile
from tests.conftest import PrometheusSession
from tests.support.prom_histories import SIM_CASES, SIM_MINUTES, Area, sim_holdings, sim_origin
from tests.support.usage_reads import read_one_view

WINDOW = timedelta(hours=1)
THRESHOLD = 0.05
ORIGIN = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)


def at(minute: float, origin: datetime = ORIGIN) -> datetime:
    return origin + timedelta(minutes=minute)


@dataclass
class Holdings:
    held: list[GpuHolding]

    def gpu_holdings(self) -> Sequence[GpuHolding]:
        return self.held


def holding(
    pod: str,
    *,
    start: float = 0,
    end: float | None = None,
    origin: datetime = ORIGIN,
    index: int = 0,
) -> GpuHolding:
    node = f"node-{pod}"
    return GpuHolding(
        key=GpuKey("sim", pod, gpu_uuid(node, index)),
        raycluster=pod,
        node=node,
        start=at(start, origin),
        end=None if end is None else at(end, origin),
    )


def read(
    profiles: dict[str, Profile],
    held: list[GpuHolding],
    *,
    minute: float,
    origin: datetime = ORIGIN,
) -> FleetUsage:
    exporter = SimulatedExporter(
        holdings=Holdings(held),
        profiles={("sim", name): profile for name, profile in profiles.items()},
        origin=origin,
    )
    return read_one_view(exporter, window=WINDOW, threshold=THRESHOLD, now=at(minute, origin))


def one(usage: FleetUsage, pod: str) -> GpuUsage:
    gpus = usage.for_pod("sim", pod)
    assert len(gpus) == 1, gpus
    return gpus[0]


def test_a_gpu_idle_for_the_last_hour_has_no_peak_above_idle_and_its_last_busy_slot() -> None:
    usage = read({"p": Profile.busy(80).idle_from(60)}, [holding("p")], minute=180)

    gpu = one(usage, "p")
    assert gpu.peak == 0.0
    assert gpu.coverage == 1.0
    assert gpu.last_busy_at == at(60)  # the slot ending at minute 60 held the 59:37 sample
    assert gpu.last_sample_at == at(179, ORIGIN) + timedelta(seconds=37)
    assert (gpu.hostname, gpu.model) == ("node-p", "NVIDIA A100-SXM4-80GB")


def test_a_gap_costs_the_coverage_of_the_slots_without_a_sample() -> None:
    usage = read({"p": Profile.idle().gap(150, 165)}, [holding("p")], minute=180)

    # Samples at :07 and :37 past each minute: minutes 150..164 are missing, so the slots
    # ending at 151..165 hold nothing; 61 steps in the closed window minus 15 = 46.
    assert one(usage, "p").coverage == pytest.approx(46 / 60)


def test_a_nan_newest_sample_is_no_sample_and_an_all_nan_window_has_no_peak() -> None:
    usage = read({"p": Profile.idle().nan(100, 200)}, [holding("p")], minute=180)

    gpu = one(usage, "p")
    assert (gpu.peak, gpu.coverage, gpu.last_sample_at) == (None, 0.0, None)


def test_a_gpu_is_reported_only_once_its_pod_runs_and_until_its_history_ages_out() -> None:
    held = [holding("young", start=170), holding("gone", start=0, end=100)]
    profiles = {"young": Profile.idle(), "gone": Profile.busy(90)}

    before = read(profiles, held, minute=160)
    after = read(profiles, held, minute=180)

    assert before.for_pod("sim", "young") == ()
    assert one(after, "young").coverage == pytest.approx(10 / 60)
    gone = one(after, "gone")  # its last busy slot is within the 24 h lookback
    assert (gone.peak, gone.last_sample_at, gone.last_busy_at) == (None, None, at(100))


# -- the same samples in a real Prometheus ------------------------------------------------------


def test_the_simulated_exporter_matches_a_real_prometheus_on_the_same_samples(
    prometheus_session: PrometheusSession,
) -> None:
    """The session's Prometheus holds SIM_CASES' samples (prom_histories.sim_exporter),
    backfilled before it started, in this test's own twelve hours."""
    now = datetime.fromtimestamp(prometheus_session.anchor(Area.SIM_EXPORTER), UTC)
    origin = sim_origin(int(now.timestamp()))
    real = PrometheusMetricSource(
        prometheus=PrometheusSettings(url=prometheus_session.server.url), policy=PolicySettings()
    )
    try:
        expected = read_one_view(real, window=WINDOW, threshold=THRESHOLD, now=now)
    finally:
        real.close()

    simulated = read(
        {pod: case[0] for pod, case in SIM_CASES.items()},
        sim_holdings(origin),
        minute=SIM_MINUTES,
        origin=origin,
    )

    assert expected.failure is None
    assert len(expected.gpus) == len(SIM_CASES)
    assert sorted(simulated.gpus) == sorted(expected.gpus)
    for pod_key, gpus in expected.gpus.items():
        (want,), (got,) = gpus, simulated.gpus[pod_key]
        assert _same(got, want), (pod_key, got, want)


def _same(got: GpuUsage, want: GpuUsage) -> bool:
    def close(a: float | None, b: float | None) -> bool:
        if a is None or b is None:
            return a is b
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)

    return (
        got.key == want.key
        and close(got.peak, want.peak)
        and close(got.coverage, want.coverage)
        and got.last_sample_at == want.last_sample_at
        and got.last_busy_at == want.last_busy_at
        and got.hostname == want.hostname
        and got.model == want.model
    )
