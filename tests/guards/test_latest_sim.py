"""The demo's simulated exporter answers the fresh check as an instant selector would."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.domain.usage.fresh import LatestUsage
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.sim.metrics import ExporterTiming, GpuHolding, SimulatedExporter
from autoscaler.sim.profiles import Profile

ORIGIN = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
TIMING = ExporterTiming(scrape=30, offset=7)


@dataclass
class Holdings:
    held: list[GpuHolding]

    def gpu_holdings(self) -> Sequence[GpuHolding]:
        return self.held


def holding(pod: str, *, end_minute: float | None = None) -> GpuHolding:
    end = None if end_minute is None else ORIGIN + timedelta(minutes=end_minute)
    return GpuHolding(GpuKey("sim", pod, f"GPU-{pod}"), pod, f"node-{pod}", ORIGIN, end)


def read_at(minute: float, pods: list[str]) -> LatestUsage:
    profiles = {
        "idle": Profile.idle(1),
        "busy": Profile.busy(60),
        "nan": Profile.idle().nan(0, 1000),
        "gone": Profile.idle(),
        "other": Profile.busy(),
    }
    held = [holding(name) for name in profiles if name != "gone"]
    held.append(holding("gone", end_minute=50))
    exporter = SimulatedExporter(
        holdings=Holdings(held),
        profiles={("sim", name): profile for name, profile in profiles.items()},
        origin=ORIGIN,
        timing=TIMING,
    )
    return exporter.read_latest(
        [("sim", pod) for pod in pods], now=ORIGIN + timedelta(minutes=minute)
    )


@pytest.mark.parametrize(
    ("pod", "value", "age_s"),
    [
        pytest.param("idle", 0.01, 23, id="idle"),
        pytest.param("busy", 0.6, 23, id="busy"),
        pytest.param("nan", None, 23, id="nan-has-no-value"),
    ],
)
def test_each_gpu_answers_its_newest_sample_and_its_time(
    pod: str, value: float | None, age_s: int
) -> None:
    now = ORIGIN + timedelta(minutes=60)
    [sample] = read_at(60, [pod]).for_pod("sim", pod)
    assert sample.value == (pytest.approx(value) if value is not None else None)
    assert sample.at == now - timedelta(seconds=age_s)  # scrapes at :07 and :37


def test_a_gpu_without_a_sample_in_the_lookback_delta_is_absent() -> None:
    assert read_at(60, ["gone"]).samples == {}  # its pod ended ten minutes ago


def test_only_the_pods_asked_about_are_answered() -> None:
    assert set(read_at(60, ["idle"]).samples) == {("sim", "idle")}
