"""Each usage view judged from the shared answers of one fleet read (pure; no server needed).

The answers are written as a Prometheus 2.x server returns them, already divided by each
signal's scale: the SLOTS matrix has, per raw series (one per signal, label style and
exporter pod), a point per slot end (multiples of the slot, up to `now` rounded up to a slot)
holding the highest ratio in that slot, NaN when the slot held only NaN, no point when it
held no sample.
The same shapes are read from a real Prometheus in test_prometheus_views.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.prometheus.promql import Columns, QueryWindow, Row
from autoscaler.adapters.prometheus.views import (
    FleetAnswers,
    merged_steps,
    newest_of,
    slots_end,
    usage_of_view,
)
from autoscaler.domain.models import GpuUsage, UsageView

MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)  # on a slot boundary
END = NOW.timestamp()
IDLE = 0.01
NAN = math.nan
VIEW = UsageView(HOUR, 0.05)


def labels(
    pod: str = "p", *, style: str = "exported", uuid: str = "GPU-1", **extra: str
) -> dict[str, str]:
    prefix = "exported_" if style == "exported" else ""
    return {f"{prefix}namespace": "ns", f"{prefix}pod": pod, "UUID": uuid, **extra}


def slots(values: Mapping[int, float], **label: str) -> Columns:
    """Points `minutes ago -> ratio` for one series of a GPU."""
    ago = sorted(values, reverse=True)
    return labels(**label), [END - m * 60 for m in ago], [values[m] for m in ago]


def every_minute(value: float, *, minutes: int = 75, **overrides: float) -> dict[int, float]:
    points = dict.fromkeys(range(minutes + 1), value)
    points.update({int(m): v for m, v in overrides.items()})
    return points


def newest(pod: str = "p", *, ago_s: float = 15, host: str = "node-1") -> Row:
    keys = {"workload_namespace": "ns", "workload_pod": pod, "UUID": "GPU-1"}
    return {**keys, "gpu_host": host, "modelName": "A100"}, END - ago_s


def judge(
    view: UsageView = VIEW,
    *,
    matrix: Sequence[Columns] = (),
    busy: Sequence[Columns] = (),
    newest_rows: Sequence[Row] = (),
    now: datetime = NOW,
    views: Sequence[UsageView] = (),
) -> dict[tuple[str, str], tuple[GpuUsage, ...]]:
    answers = FleetAnswers(merged_steps(matrix), merged_steps(busy), newest_of(newest_rows))
    span = QueryWindow.for_views([view, *views], slot=MINUTE, lookback=6 * HOUR)
    return usage_of_view(answers, view, span=span, now=now)


def the_gpu(fleet: Mapping[tuple[str, str], tuple[GpuUsage, ...]], pod: str = "p") -> GpuUsage:
    [gpu] = fleet[("ns", pod)]
    return gpu


def ago(minutes: float) -> datetime:
    return NOW - timedelta(minutes=minutes)


@pytest.mark.parametrize(
    ("now", "end"),
    [
        pytest.param(NOW, NOW, id="on-a-slot-end-unchanged"),
        pytest.param(NOW + timedelta(seconds=1), NOW + MINUTE, id="just-after-rounds-up"),
        pytest.param(NOW - timedelta(seconds=59.5), NOW, id="within-a-slot-rounds-up"),
    ],
)
def test_the_slots_end_at_now_rounded_up_so_the_newest_samples_are_in_a_slot(
    now: datetime, end: datetime
) -> None:
    assert slots_end(now, MINUTE) == end


def test_an_idle_gpu_has_its_low_peak_full_coverage_and_no_busy_time() -> None:
    gpu = the_gpu(judge(matrix=[slots(every_minute(IDLE))], newest_rows=[newest()]))
    assert (gpu.peak, gpu.coverage, gpu.last_busy_at) == (IDLE, 1.0, None)
    assert (gpu.last_sample_at, gpu.hostname, gpu.model) == (ago(0.25), "node-1", "A100")


def test_the_peak_is_the_window_and_coverage_counts_both_window_ends() -> None:
    # The slot ending 60 min ago holds samples from before the window: coverage counts it
    # (61 slot ends, capped), the peak does not.
    gpu = the_gpu(judge(matrix=[slots(every_minute(IDLE, **{"60": 0.9, "61": 0.9}))]))
    assert gpu.peak == IDLE
    assert gpu.coverage == 1.0
    assert gpu.last_busy_at == ago(60)  # still exact: within the window and one coarse step


def test_nan_slots_and_holes_are_not_coverage_and_nan_is_never_a_peak() -> None:
    values = {m: v for m, v in every_minute(IDLE).items() if not 20 <= m < 40}  # 20 holes
    values.update(dict.fromkeys(range(40, 50), NAN))  # 10 slots of only NaN
    gpu = the_gpu(judge(matrix=[slots(values)]))
    assert gpu.coverage == pytest.approx(31 / 60)
    assert gpu.peak == IDLE


def test_a_gpu_with_only_nan_has_no_peak_and_no_coverage() -> None:
    gpu = the_gpu(judge(matrix=[slots(every_minute(NAN))]))
    assert (gpu.peak, gpu.coverage, gpu.last_busy_at) == (None, 0.0, None)


@pytest.mark.parametrize(
    ("view", "peak", "last_busy"),
    [
        pytest.param(UsageView(HOUR, 0.05), 0.9, ago(9), id="hour-at-5-percent"),
        pytest.param(UsageView(HOUR, 0.5), 0.9, ago(50), id="higher-threshold-sees-older-burst"),
        pytest.param(UsageView(30 * MINUTE, 0.05), 0.4, ago(9), id="half-hour-window"),
        pytest.param(UsageView(5 * MINUTE, 0.05), IDLE, ago(9), id="short-window-misses-burst"),
        pytest.param(UsageView(HOUR, 0.95), 0.9, None, id="above-every-burst"),
    ],
)
def test_each_view_judges_the_same_slots_on_its_own_window_and_threshold(
    view: UsageView, peak: float, last_busy: datetime | None
) -> None:
    bursts = every_minute(IDLE, **{"9": 0.4, "50": 0.9})
    gpu = the_gpu(judge(view, matrix=[slots(bursts)], views=[UsageView(3 * HOUR, 0.01)]))
    assert (gpu.peak, gpu.last_busy_at) == (peak, last_busy)


def test_beyond_the_views_slots_the_last_busy_time_is_the_coarse_step() -> None:
    matrix = [slots(every_minute(IDLE, minutes=200, **{"100": 0.9}))]  # slots reach 3 h 15
    coarse = [slots({195: 0.9, 105: 0.9})]  # coarse steps above the lowest threshold
    one_hour = the_gpu(judge(matrix=matrix, busy=coarse, views=[UsageView(3 * HOUR, 0.05)]))
    three_hours = the_gpu(judge(UsageView(3 * HOUR, 0.05), matrix=matrix, busy=coarse))
    assert one_hour.last_busy_at == ago(105)  # its own slots end at 75 min: as if read alone
    assert three_hours.last_busy_at == ago(100)  # slot precision over its longer window


def test_a_busy_slot_ending_after_now_is_busy_now() -> None:
    now = NOW - timedelta(seconds=20)  # the last slot ends 20 s from now
    gpu = the_gpu(judge(matrix=[slots(every_minute(IDLE, **{"0": 0.9}))], now=now))
    assert gpu.last_busy_at == now and gpu.peak == 0.9


def test_the_two_label_styles_and_split_series_of_one_gpu_merge_per_slot() -> None:
    old = slots({m: 0.03 for m in range(30, 76)})  # the replaced exporter's series
    new = slots({m: IDLE for m in range(31)}, style="plain")  # now read with honorLabels
    gpu = the_gpu(judge(matrix=[old, new]))
    assert (gpu.peak, gpu.coverage) == (0.03, 1.0)


def test_a_real_slot_wins_over_a_nan_one_of_the_same_gpu() -> None:
    gpu = the_gpu(judge(matrix=[slots(every_minute(NAN)), slots(every_minute(IDLE))]))
    assert (gpu.peak, gpu.coverage) == (IDLE, 1.0)


def test_mig_instances_and_gpus_of_one_pod_are_separate_entries() -> None:
    fleet = judge(
        matrix=[
            slots(every_minute(0.7), GPU_I_ID="1"),
            slots(every_minute(IDLE), GPU_I_ID="2"),
            slots(every_minute(0.6), uuid="GPU-2"),
        ]
    )
    entries = {(g.key.uuid, g.key.mig_instance): g.peak for g in fleet[("ns", "p")]}
    assert entries == {("GPU-1", "1"): 0.7, ("GPU-1", "2"): IDLE, ("GPU-2", None): 0.6}


def test_a_gpu_seen_only_before_a_views_window_is_not_in_that_view() -> None:
    matrix = [slots({m: IDLE for m in range(90, 121)}, pod="gone")]
    assert judge(matrix=matrix, views=[UsageView(3 * HOUR, 0.05)]) == {}
    [gpu] = judge(UsageView(3 * HOUR, 0.05), matrix=matrix)[("ns", "gone")]
    assert gpu.coverage == pytest.approx(31 / 180)


def test_a_gpu_known_only_by_its_busy_past_or_its_newest_sample_is_reported() -> None:
    fleet = judge(busy=[slots({120: 0.9}, pod="gone")], newest_rows=[newest("new")])
    assert the_gpu(fleet, "gone").last_busy_at == ago(120)
    assert the_gpu(fleet, "gone").peak is None and the_gpu(fleet, "new").coverage == 0.0


def test_series_without_a_namespace_pod_or_uuid_are_dropped() -> None:
    nameless = ({"exported_pod": "p", "UUID": "GPU-1"}, [END], [0.5])
    assert judge(matrix=[nameless], newest_rows=[({"UUID": "GPU-1"}, END)]) == {}


def test_the_signals_of_a_gpu_merge_per_slot_the_highest_ratio_winning() -> None:
    gr_engine = slots(every_minute(IDLE, **{"5": 0.3}), job="gr-engine")
    gpu_util = slots(every_minute(0.02, **{"5": NAN, "9": 0.6}), job="gpu-util")
    gpu = the_gpu(judge(matrix=[gr_engine, gpu_util]))
    assert (gpu.peak, gpu.coverage, gpu.last_busy_at) == (0.6, 1.0, ago(5))


def test_holes_of_one_signal_are_filled_by_the_other_and_holes_of_both_stay_holes() -> None:
    gr_engine = slots({m: IDLE for m in range(76) if m % 2})  # every other slot
    gpu_util = slots({m: IDLE for m in range(76) if m % 4 == 0}, style="plain")
    gpu = the_gpu(judge(matrix=[gr_engine, gpu_util]))
    held = [m for m in range(61) if m % 2 or m % 4 == 0]
    assert gpu.coverage == pytest.approx(len(held) / 60)


def test_the_newest_sample_is_read_from_raw_labels_of_either_style_over_every_signal() -> None:
    exported = {"exported_namespace": "ns", "exported_pod": "p", "namespace": "gpu-operator"}
    rows = [
        ({**exported, "pod": "dcgm-old", "UUID": "GPU-1", "Hostname": "node-1"}, END - 50),
        ({**exported, "pod": "dcgm-new", "UUID": "GPU-1", "Hostname": "node-2"}, END - 20),
        ({"namespace": "ns", "pod": "h", "UUID": "GPU-9", "hostname": "node-3"}, END - 5),
        ({"namespace": "ns", "pod": "h", "UUID": "GPU-9", "hostname": "node-3"}, NAN),
    ]
    fleet = judge(newest_rows=rows)
    assert (the_gpu(fleet).last_sample_at, the_gpu(fleet).hostname) == (ago(20 / 60), "node-2")
    assert (the_gpu(fleet, "h").last_sample_at, the_gpu(fleet, "h").hostname) == (
        ago(5 / 60),
        "node-3",
    )
