"""The fleet-wide PromQL and how its answers become GPU usage (pure; no server needed).

What the queries compute is checked against a real Prometheus in test_prometheus_adapter.py.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.prometheus.promql import (
    QueryTemplates,
    QueryWindow,
    Row,
    Stat,
    build_queries,
    duration,
    gpu_key,
    parse_vector,
    selector,
    usage_by_pod,
)
from autoscaler.domain.models import GpuKey, GpuUsage
from autoscaler.settings.tree import PrometheusSettings, SignalSettings

HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
SPAN = QueryWindow(window=HOUR, slot=MINUTE, lookback=timedelta(hours=24), threshold=0.05)
GR_ENGINE = SignalSettings(metric="DCGM_FI_PROF_GR_ENGINE_ACTIVE", scale=1, valid_on_mig=True)
GPU_UTIL = SignalSettings(metric="DCGM_FI_DEV_GPU_UTIL", scale=100, valid_on_mig=False)
AT = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def queries(*signals: SignalSettings, templates: QueryTemplates | None = None) -> dict[Stat, str]:
    return build_queries(signals, span=SPAN, templates=templates or QueryTemplates())


def row(namespace: str, pod: str, value: float, *, uuid: str = "GPU-1", **labels: str) -> Row:
    return ({"workload_namespace": namespace, "workload_pod": pod, "UUID": uuid, **labels}, value)


def read(
    *,
    peak: list[Row] | None = None,
    coverage: list[Row] | None = None,
    last_busy: list[Row] | None = None,
    newest: list[Row] | None = None,
) -> dict[tuple[str, str], tuple[GpuUsage, ...]]:
    rows = {
        Stat.PEAK: peak or [],
        Stat.COVERAGE: coverage or [],
        Stat.LAST_BUSY: last_busy or [],
        Stat.NEWEST: newest or [],
    }
    return dict(usage_by_pod(rows, window=HOUR, slot=MINUTE))


# -- building the queries ------------------------------------------------------------------


def test_a_read_is_one_query_per_measure_whatever_the_number_of_signals() -> None:
    assert set(queries(GR_ENGINE)) == set(queries(GR_ENGINE, GPU_UTIL)) == set(Stat)


def test_every_query_covers_every_signal_tagged_so_that_or_keeps_them_all() -> None:
    for text in queries(GR_ENGINE, GPU_UTIL).values():
        assert '"signal", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"' in text
        assert '"signal", "DCGM_FI_DEV_GPU_UTIL"' in text
        assert " or " in text


def test_every_query_is_merged_per_gpu_whatever_exporter_series_it_came_from() -> None:
    for stat, text in queries(GR_ENGINE).items():
        by = ", ".join(stat.group_labels)
        assert text.startswith(f"max by ({by}) (")
        assert "instance" not in by


def test_a_signal_that_reads_zero_on_mig_skips_mig_instances_in_the_query() -> None:
    assert selector(GPU_UTIL) == 'DCGM_FI_DEV_GPU_UTIL{GPU_I_ID=""}'
    assert selector(GR_ENGINE) == "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    for text in queries(GPU_UTIL).values():
        assert "DCGM_FI_DEV_GPU_UTIL[" not in text
        assert "DCGM_FI_DEV_GPU_UTIL)" not in text


def test_queries_carry_no_namespace_matcher_so_thanos_tenancy_can_add_its_own() -> None:
    for text in queries(GR_ENGINE, GPU_UTIL).values():
        assert re.search(r'namespace\s*(=|!=|=~|!~)\s*"', text) is None


def test_the_workload_labels_are_taken_from_exported_labels_when_present() -> None:
    text = queries(GR_ENGINE)[Stat.PEAK]
    plain = text.index('"workload_namespace", "$1", "namespace", "(.+)"')
    exported = text.index('"workload_namespace", "$1", "exported_namespace", "(.+)"')
    assert plain < exported  # applied later, so it wins
    assert '"workload_pod", "$1", "exported_pod", "(.+)"' in text


def test_spans_threshold_and_scale_are_written_into_the_queries() -> None:
    built = queries(GPU_UTIL)
    assert "[3600s]" in built[Stat.PEAK] and "/ 100.0" in built[Stat.PEAK]
    assert "[3600s:60s]" in built[Stat.COVERAGE]
    assert "> 0.05)[4500s:60s]" in built[Stat.LAST_BUSY]  # the window and one coarse step
    assert "[900s]) / 100.0 > 0.05)[86400s:900s]" in built[Stat.LAST_BUSY]  # coarse beyond


def test_coverage_merges_series_by_the_raw_labels_of_each_label_style() -> None:
    text = queries(GPU_UTIL)[Stat.COVERAGE]
    assert 'DCGM_FI_DEV_GPU_UTIL{GPU_I_ID="",exported_pod!=""}[60s]' in text
    assert 'DCGM_FI_DEV_GPU_UTIL{GPU_I_ID="",exported_pod=""}[60s]' in text
    assert "max by (exported_namespace, exported_pod, UUID, GPU_I_ID)" in text
    assert "max by (namespace, pod, UUID, GPU_I_ID)" in text


def test_the_newest_sample_time_is_read_from_the_selector_itself() -> None:
    text = queries(GR_ENGINE)[Stat.NEWEST]
    assert (
        "timestamp(DCGM_FI_PROF_GR_ENGINE_ACTIVE) and (DCGM_FI_PROF_GR_ENGINE_ACTIVE >= 0)" in text
    )


def test_a_template_can_be_replaced_and_keeps_its_placeholders() -> None:
    templates = QueryTemplates(peak='max_over_time({selector}{{cluster="a"}}[{window}]) / {scale}')
    text = queries(GR_ENGINE, templates=templates)[Stat.PEAK]
    assert 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{cluster="a"}[3600s]) / 1.0' in text


@pytest.mark.parametrize(
    ("span", "expected"),
    [
        pytest.param(HOUR, "3600s", id="whole-seconds"),
        pytest.param(timedelta(seconds=1.5), "1500ms", id="milliseconds"),
        pytest.param(timedelta(days=1), "86400s", id="a-day"),
    ],
)
def test_spans_are_written_as_promql_durations(span: timedelta, expected: str) -> None:
    assert duration(span) == expected


def test_an_empty_span_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        duration(timedelta(0))


# -- reading the answers -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        pytest.param(
            {"workload_namespace": "ns", "workload_pod": "p", "UUID": "GPU-1"},
            GpuKey("ns", "p", "GPU-1"),
            id="whole-gpu",
        ),
        pytest.param(
            {"workload_namespace": "ns", "workload_pod": "p", "UUID": "GPU-1", "GPU_I_ID": "3"},
            GpuKey("ns", "p", "GPU-1", "3"),
            id="mig-instance",
        ),
        pytest.param(
            {"workload_namespace": "ns", "workload_pod": "p", "UUID": "GPU-1", "GPU_I_ID": ""},
            GpuKey("ns", "p", "GPU-1"),
            id="empty-mig-label-is-a-whole-gpu",
        ),
        pytest.param({"workload_namespace": "ns", "UUID": "GPU-1"}, None, id="no-pod"),
        pytest.param({"workload_namespace": "ns", "workload_pod": "p"}, None, id="no-uuid"),
    ],
)
def test_a_result_row_names_a_gpu_by_namespace_pod_uuid_and_mig_instance(
    labels: dict[str, str], expected: GpuKey | None
) -> None:
    assert gpu_key(labels) == expected


def test_an_instant_vector_is_read_into_labels_and_values() -> None:
    result = [{"metric": {"UUID": "GPU-1"}, "value": [1.0, "NaN"]}]
    [(labels, value)] = parse_vector(result)
    assert labels == {"UUID": "GPU-1"} and math.isnan(value)


@pytest.mark.parametrize(
    "result",
    [
        pytest.param([{"metric": {}}], id="no-value"),
        pytest.param([{"metric": {}, "value": [1.0, "busy"]}], id="value-not-a-number"),
        pytest.param([[1.0, "0.5"]], id="a-scalar-not-a-vector"),
    ],
)
def test_anything_but_an_instant_vector_is_refused(result: list[object]) -> None:
    with pytest.raises((KeyError, TypeError, ValueError)):
        parse_vector(result)  # type: ignore[arg-type]


def test_a_nan_peak_is_no_peak() -> None:
    [gpu] = read(peak=[row("ns", "p", math.nan)])[("ns", "p")]
    assert gpu.peak is None


@pytest.mark.parametrize(
    ("slots", "expected"),
    [
        pytest.param(61.0, 1.0, id="both-window-ends-counted-is-capped"),
        pytest.param(42.0, 0.7, id="a-gap"),
        pytest.param(None, 0.0, id="no-real-sample"),
    ],
)
def test_coverage_is_the_share_of_the_windows_slots(slots: float | None, expected: float) -> None:
    coverage = [] if slots is None else [row("ns", "p", slots)]
    [gpu] = read(peak=[row("ns", "p", 0.0)], coverage=coverage)[("ns", "p")]
    assert gpu.coverage == pytest.approx(expected)


def test_times_are_read_as_utc_and_the_newest_series_names_host_and_model() -> None:
    at = AT.timestamp()
    newest = [
        row("ns", "p", at - 600, gpu_host="old-exporter-pod", modelName="A100"),
        row("ns", "p", at, gpu_host="node-1", modelName="A100"),
    ]
    [gpu] = read(peak=[row("ns", "p", 0.0)], last_busy=[row("ns", "p", at - 60)], newest=newest)[
        ("ns", "p")
    ]
    assert gpu.last_sample_at == AT
    assert gpu.last_busy_at == AT - MINUTE
    assert (gpu.hostname, gpu.model) == ("node-1", "A100")


def test_a_gpu_known_to_one_query_only_is_reported_with_nothing_else_known() -> None:
    [gpu] = read(last_busy=[row("ns", "p", AT.timestamp())])[("ns", "p")]
    assert gpu.peak is None and gpu.coverage == 0.0
    assert gpu.last_sample_at is None


def test_non_finite_times_are_unknown_times() -> None:
    [gpu] = read(newest=[row("ns", "p", math.nan)], last_busy=[row("ns", "p", math.inf)])[
        ("ns", "p")
    ]
    assert gpu.last_sample_at is None and gpu.last_busy_at is None


def test_gpus_are_grouped_by_pod_and_rows_without_a_gpu_are_dropped() -> None:
    fleet = read(
        peak=[
            row("ns", "p", 0.1, uuid="GPU-2"),
            row("ns", "p", 0.2, uuid="GPU-1"),
            row("ns", "q", 0.3),
            ({"UUID": "GPU-9"}, 0.9),
        ]
    )
    assert set(fleet) == {("ns", "p"), ("ns", "q")}
    assert [g.key.uuid for g in fleet[("ns", "p")]] == ["GPU-1", "GPU-2"]


def test_the_default_settings_build_queries_without_leftover_placeholders() -> None:
    built = build_queries(PrometheusSettings().signals, span=SPAN, templates=QueryTemplates())
    for text in built.values():
        assert "{selector}" not in text and "{window}" not in text and "{keys}" not in text
