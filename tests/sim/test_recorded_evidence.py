"""`backtest --demo`'s recorded history answers the evidence signals' per-slot forms exactly as
the live read writes them (`SLOT_PROMQL`, by each signal's form), from the noisy story's
samples."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from autoscaler.adapters.prometheus.evidence_base import SLOT_PROMQL
from autoscaler.compose.backtest import recorded_story
from autoscaler.demo.scenarios import SCENARIOS
from autoscaler.domain.usage.evidence import DEVICE_SIGNALS, Signal, SlotForm
from autoscaler.settings.evidence import EvidenceSettings
from autoscaler.settings.tree import Settings
from autoscaler.sim.history import RecordedHistory, RecordedSeries
from autoscaler.sim.metrics import GPU_MODEL

NOISY = SCENARIOS["noisy"]
SLOT = timedelta(seconds=60)
FIELDS = EvidenceSettings()
METRICS = {signal: FIELDS.device(signal).metric for signal in DEVICE_SIGNALS}


@pytest.fixture(scope="module")
def history() -> RecordedHistory:
    return RecordedHistory(
        [recorded_story(NOISY)],
        signals=Settings().prometheus.signals,
        slot=SLOT,
        end=NOISY.start + timedelta(minutes=70),
    )


def at(minute: float) -> datetime:
    return NOISY.start + timedelta(minutes=minute)


def ask(history: RecordedHistory, signal: Signal, *, slot: str = "60s") -> list[RecordedSeries]:
    selector = f'{METRICS[signal]}{{exported_namespace=~".+"}}'
    form = signal.row.form
    assert isinstance(form, SlotForm)
    promql = SLOT_PROMQL[form].format(selector=selector, slot=slot)
    reply = history.query_range(promql, start=at(40), end=at(70), step=SLOT)
    return list(reply.series)


def of(series: list[RecordedSeries], raycluster: str) -> list[RecordedSeries]:
    return [s for s in series if s.labels["exported_pod"].startswith(f"{raycluster}-")]


def values_at(series: RecordedSeries, *minutes: float) -> list[float]:
    points = dict(series.values)
    return [points[int(at(minute).timestamp())] for minute in minutes]


def test_the_framebuffer_form_is_each_slots_growth_in_mib(history: RecordedHistory) -> None:
    loader = of(ask(history, Signal.FRAMEBUFFER), "weight-loader")

    assert len(loader) == 2  # one series per GPU, with dcgm-exporter's labels
    for series in loader:
        # 3 GiB/min from minute 45 to 65: the slot ending at 46 holds 45:37, 37 s in; the
        # one ending at 66 the last 23 s up to 60 GiB
        assert values_at(series, 44, 46, 50, 66, 67) == pytest.approx(
            [0.0, 3072 * 37 / 60, 3072.0, 3072.0 * 23 / 60, 0.0]
        )
        assert series.labels["modelName"] == GPU_MODEL


def test_the_mean_forms_are_the_slots_mean_in_watts_and_bytes_per_second(
    history: RecordedHistory,
) -> None:
    (power,) = of(ask(history, Signal.POWER), "weight-loader")[:1]
    (pcie,) = of(ask(history, Signal.PCIE), "weight-loader")[:1]

    assert values_at(power, 44, 50, 70) == pytest.approx([60.0, 75.0, 366.0])
    assert values_at(pcie, 44, 50) == pytest.approx([20e3, 3072 / 60 * 2**20 * 1.25])


def test_a_half_used_cluster_records_its_gpus_apart(history: RecordedHistory) -> None:
    power = of(ask(history, Signal.POWER), "half-used")

    assert sorted(values_at(series, 60)[0] for series in power) == [60.0, 60.0, 349.0, 349.0]


def test_nvlink_is_not_recorded_where_no_profile_scripts_it(history: RecordedHistory) -> None:
    assert ask(history, Signal.NVLINK) == []


def test_a_slot_other_than_the_recorded_one_is_refused(history: RecordedHistory) -> None:
    with pytest.raises(ValueError, match="60s slots, not 120s"):
        ask(history, Signal.POWER, slot="120s")
