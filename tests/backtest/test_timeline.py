"""Slot series and the interval arithmetic that finds the steps worth deciding."""

from __future__ import annotations

import math

import pytest

from autoscaler.adapters.prometheus.promql import workload_gpu_key
from autoscaler.adapters.prometheus.range import RangeSeries
from autoscaler.backtest.identity import WorkloadKey
from autoscaler.backtest.timeline import (
    GpuTrack,
    Scaled,
    chunk_from,
    covered,
    minus,
    runs,
    silence,
)
from autoscaler.domain.usage.gpus import GpuKey

KEY = GpuKey("ns", "rc-head-abcde", "GPU-1")
EXPORTER = {"namespace": "nvidia-gpu-operator", "pod": "nvidia-dcgm-exporter-abcde"}
LABELS = EXPORTER | {"exported_namespace": "ns", "exported_pod": "rc-head-abcde", "UUID": "GPU-1"}


def test_values_land_in_their_slots_and_missing_slots_are_nan() -> None:
    series = [RangeSeries(LABELS, [[60.0, "0.5"], [180.0, "NaN"], [240.0, "0"]])]

    chunk = chunk_from([Scaled(series)], start=60, slot=60, steps=4)

    values = chunk.values[KEY]
    assert values[0] == 0.5 and math.isnan(values[1]) and math.isnan(values[2])
    assert values[3] == 0.0


def test_the_workloads_labels_win_over_the_exporters_as_in_the_live_queries() -> None:
    honored = {"namespace": "ns", "pod": "rc-head-abcde", "UUID": "GPU-1"}
    assert workload_gpu_key(LABELS) == KEY  # behind a ServiceMonitor: exported_* are the workload's
    assert workload_gpu_key(honored) == KEY  # honorLabels: the plain labels are the workload's
    assert workload_gpu_key(EXPORTER | {"exported_namespace": "ns", "UUID": "GPU-1"}) == GpuKey(
        "ns", "nvidia-dcgm-exporter-abcde", "GPU-1"
    )


def test_each_signal_is_divided_by_its_scale_and_the_gpu_keeps_the_highest() -> None:
    engine = Scaled([RangeSeries(LABELS, [[0.0, "0.2"], [60.0, "NaN"]])], scale=1)
    util = Scaled([RangeSeries(LABELS, [[0.0, "10"], [60.0, "30"]])], scale=100)

    assert chunk_from([engine, util], start=0, slot=60, steps=2).values[KEY] == [0.2, 0.3]


def test_a_gpu_split_over_two_rows_keeps_the_highest_real_value() -> None:
    series = [
        RangeSeries(LABELS, [[0.0, "0.2"], [60.0, "NaN"]]),
        RangeSeries(LABELS, [[0.0, "NaN"], [60.0, "0.1"]]),
    ]

    assert chunk_from([Scaled(series)], start=0, slot=60, steps=2).values[KEY] == [0.2, 0.1]


@pytest.mark.parametrize(
    ("indices", "expected"),
    [
        pytest.param([], [], id="nothing"),
        pytest.param([3, 4, 5], [(3, 5)], id="one-stretch"),
        pytest.param([1, 2, 5, 7, 8], [(1, 2), (5, 5), (7, 8)], id="three-stretches"),
    ],
)
def test_runs_are_the_consecutive_stretches(
    indices: list[int], expected: list[tuple[int, int]]
) -> None:
    assert runs(indices) == expected


def test_a_slot_covers_the_steps_whose_window_holds_it() -> None:
    # A window of 3 slots holds index x at steps x, x + 1 and x + 2.
    assert covered([2, 10], carry=None, span=3, steps=12) == [(2, 5), (10, 12)]
    assert covered([2, 4], carry=None, span=3, steps=12) == [(2, 7)]
    assert covered([], carry=-2, span=3, steps=12) == [(0, 1)]  # from the previous chunk


@pytest.mark.parametrize(
    ("indices", "carry", "after", "expected"),
    [
        pytest.param([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], None, 2, None, id="never-silent"),
        pytest.param([0, 1, 2, 7, 8], None, 1, 2, id="silent-after-2-for-4-steps"),
        pytest.param([0, 1, 2, 4, 5, 9], None, 0, 5, id="short-gaps-do-not-count"),
        pytest.param([], -1, -1, -1, id="silent-since-the-previous-chunk"),
        pytest.param([8], -3, -1, -3, id="back-only-after-a-silence"),
        pytest.param([0, 1, 2, 3, 4, 5, 6, 7], None, 3, None, id="not-silent-long-enough-yet"),
    ],
)
def test_silence_is_the_last_sample_before_a_whole_window_without_one(
    indices: list[int], carry: int | None, after: int, expected: int | None
) -> None:
    assert silence(indices, carry=carry, after=after, span=3, steps=10) == expected


def test_minus_cuts_the_dropped_intervals_out() -> None:
    assert minus([(0, 10), (12, 20)], [(2, 4), (8, 14)]) == [(0, 2), (4, 8), (14, 20)]
    assert minus([(0, 5)], []) == [(0, 5)]
    assert minus([(0, 5)], [(0, 5)]) == []


def test_a_window_reaches_back_into_the_previous_chunks_tail() -> None:
    track = GpuTrack(KEY, WorkloadKey("ns", "rc"), thresholds=(0.05,))
    first = chunk_from(
        [Scaled([RangeSeries(LABELS, [[0.0, "0.1"], [60.0, "0.2"]])])], start=0, slot=60, steps=2
    )
    track.load(first)
    track.finish(first, keep=3)
    second = chunk_from(
        [Scaled([RangeSeries(LABELS, [[120.0, "0.3"]])])], start=120, slot=60, steps=2
    )
    track.load(second)

    window = track.window(0, 4)

    assert math.isnan(window[0]) and window[1:] == [0.1, 0.2, 0.3]
    assert track.last_loud_at(second, 0.05, 1) == 120
    assert track.last_real_at(second, 1) == 120
