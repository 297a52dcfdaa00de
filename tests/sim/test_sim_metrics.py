"""The simulated exporter computes what the real queries would return from the same samples."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from autoscaler.adapters.prometheus import PrometheusMetricSource
from autoscaler.config import PolicySettings, PrometheusSettings
from autoscaler.domain.models import FleetUsage, GpuKey, GpuUsage
from autoscaler.sim.metrics import GpuHolding, SimulatedExporter
from autoscaler.sim.pods import gpu_uuid
from autoscaler.sim.profiles import Profile
from tests.support.prom import GPU_UTIL, Gpu, PrometheusServer, require_binaries

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


def holding(pod: str, *, start: float = 0, end: float | None = None, origin: datetime = ORIGIN,
            index: int = 0) -> GpuHolding:  # fmt: skip
    node = f"node-{pod}"
    return GpuHolding(
        key=GpuKey("sim", pod, gpu_uuid(node, index)),
        raycluster=pod,
        node=node,
        start=at(start, origin),
        end=None if end is None else at(end, origin),
    )


def read(profiles: dict[str, Profile], held: list[GpuHolding], *, minute: float,
         origin: datetime = ORIGIN) -> FleetUsage:  # fmt: skip
    exporter = SimulatedExporter(
        holdings=Holdings(held),
        profiles={("sim", name): profile for name, profile in profiles.items()},
        origin=origin,
    )
    return exporter.read_usage(window=WINDOW, threshold=THRESHOLD, now=at(minute, origin))


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

CASES: dict[str, tuple[Profile, float, float | None]] = {
    # pod: (profile, pod start minute, pod end minute)
    "busy-then-idle": (Profile.busy(80).idle_from(120), 0, None),
    "bursty": (Profile.bursty(every=25, busy_for=3), 0, None),
    "gap": (Profile.busy(70).gap(150, 165), 0, None),
    "loading": (Profile.loading(until=170, pct=2).busy_from(170, 90), 0, None),
    "nan-newest": (Profile.busy(60).nan(175, 200), 0, None),
    "nan-middle": (Profile.busy(50).nan(130, 140).idle_from(140), 0, None),
    "young": (Profile.idle(), 150, None),
    "deleted": (Profile.busy(85), 0, 170),
    "low": (Profile.idle(3), 0, None),
}


class RigProfile:
    """Our profile and pod lifetime, seen as the rig's per-second utilization."""

    def __init__(self, held: GpuHolding, profile: Profile, origin: datetime) -> None:
        self._held, self._profile, self._origin = held, profile, origin.timestamp()

    def utilization(self, t: float) -> float | None:
        if not self._held.holds_at(int(t)):
            return None
        return self._profile.percent_at((t - self._origin) / 60)


def test_the_simulated_exporter_matches_a_real_prometheus_on_the_same_samples(
    tmp_path: Path,
) -> None:
    binaries = require_binaries()
    now = datetime.fromtimestamp(int(time.time()) // 60 * 60 - 120, UTC)
    origin = now - timedelta(minutes=180)
    held = [holding(pod, start=s, end=e, origin=origin) for pod, (_, s, e) in CASES.items()]
    series = [
        Gpu(namespace="sim", pod=h.key.pod, node=h.node, uuid=h.key.uuid).history(
            RigProfile(h, CASES[h.key.pod][0], origin),  # type: ignore[arg-type]
            metrics=(GPU_UTIL,),
        )
        for h in held
    ]
    start = int(origin.timestamp()) + 7  # the simulated scrape times: :07 and :37
    with PrometheusServer(tmp_path / "prom", binaries=binaries) as prom:
        prom.backfill(series, start=start, end=int(now.timestamp()), step_s=30)
        real = PrometheusMetricSource(
            prometheus=PrometheusSettings(url=prom.url), policy=PolicySettings()
        )
        try:
            expected = real.read_usage(window=WINDOW, threshold=THRESHOLD, now=now)
        finally:
            real.close()

    simulated = read({pod: case[0] for pod, case in CASES.items()}, held, minute=180,
                     origin=origin)  # fmt: skip

    assert expected.failure is None
    assert len(expected.gpus) == len(CASES)
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
