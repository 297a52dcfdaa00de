"""The fleet-wide PromQL and how its answers are parsed (pure; no server needed).

How the answers become each view's usage is in test_fleet_views.py; what the queries compute
is checked against a real Prometheus in test_prometheus_adapter.py.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

import pytest

from autoscaler.adapters.prometheus.promql import (
    QueryTemplates,
    QueryWindow,
    Stat,
    build_queries,
    duration,
    gpu_key,
    host_of,
    parse_columns,
    parse_matrix,
    parse_vector,
    selector,
    workload_gpu_key,
)
from autoscaler.domain.models import UsageView
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.tree import PrometheusSettings, SignalSettings

HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
SPAN = QueryWindow(window=HOUR, slot=MINUTE, lookback=timedelta(hours=24), threshold=0.05)
GR_ENGINE = SignalSettings(metric="DCGM_FI_PROF_GR_ENGINE_ACTIVE", scale=1, valid_on_mig=True)
GPU_UTIL = SignalSettings(metric="DCGM_FI_DEV_GPU_UTIL", scale=100, valid_on_mig=False)


def queries(
    *signals: SignalSettings, templates: QueryTemplates | None = None
) -> dict[Stat, tuple[str, ...]]:
    return build_queries(signals, span=SPAN, templates=templates or QueryTemplates())


def every_text(built: dict[Stat, tuple[str, ...]]) -> list[str]:
    return [text for texts in built.values() for text in texts]


# -- building the queries ------------------------------------------------------------------


def test_a_read_is_one_query_per_measure_and_signal_whatever_the_fleet_and_views() -> None:
    assert set(queries(GR_ENGINE)) == set(Stat)
    assert {stat: len(texts) for stat, texts in queries(GR_ENGINE, GPU_UTIL).items()} == {
        stat: 2 for stat in Stat
    }


def test_each_signal_has_its_own_queries_in_the_order_of_the_signals() -> None:
    for gr_engine, gpu_util in queries(GR_ENGINE, GPU_UTIL).values():
        assert (
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in gr_engine and "DCGM_FI_DEV_GPU_UTIL" not in gr_engine
        )
        assert (
            "DCGM_FI_DEV_GPU_UTIL" in gpu_util and "DCGM_FI_PROF_GR_ENGINE_ACTIVE" not in gpu_util
        )


def test_the_matrices_are_the_raw_series_neither_scaled_relabelled_nor_aggregated() -> None:
    # Every operation inside a subquery runs once per series per step: Python does these.
    built = queries(GPU_UTIL)
    assert built[Stat.SLOTS] == (
        '(max_over_time(DCGM_FI_DEV_GPU_UTIL{GPU_I_ID=""}[60s]))[4500s:60s]',
    )
    for text in (*built[Stat.SLOTS], *built[Stat.BUSY]):
        for operation in (" by ", "label_replace", " / ", " or ", "instance"):
            assert operation not in text


def test_the_newest_samples_are_grouped_by_the_raw_labels_of_both_styles_host_and_model() -> None:
    [text] = queries(GR_ENGINE)[Stat.NEWEST]
    assert text.startswith(
        "max by (exported_namespace, exported_pod, UUID, GPU_I_ID, namespace, pod, "
        "workload_namespace, workload_pod, hostname, Hostname, gpu_host, modelName) ("
    )


def test_a_signal_that_reads_zero_on_mig_skips_mig_instances_in_the_query() -> None:
    assert selector(GPU_UTIL) == 'DCGM_FI_DEV_GPU_UTIL{GPU_I_ID=""}'
    assert selector(GR_ENGINE) == "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    for text in every_text(queries(GPU_UTIL)):
        assert "DCGM_FI_DEV_GPU_UTIL[" not in text
        assert "DCGM_FI_DEV_GPU_UTIL)" not in text


def test_queries_carry_no_namespace_matcher_so_thanos_tenancy_can_add_its_own() -> None:
    for text in every_text(queries(GR_ENGINE, GPU_UTIL)):
        assert re.search(r'namespace\s*(=|!=|=~|!~)\s*"', text) is None


def test_spans_are_written_into_the_queries_and_the_threshold_in_the_signals_unit() -> None:
    built = queries(GPU_UTIL)
    assert built[Stat.SLOTS][0].endswith("[60s]))[4500s:60s]")  # the window and a coarse step
    assert built[Stat.BUSY] == (
        '(max_over_time(DCGM_FI_DEV_GPU_UTIL{GPU_I_ID=""}[900s]) > 5.0)[86400s:900s]',
    )  # 5 % of a percent signal, coarse steps over the lookback


def test_one_read_is_built_for_the_longest_window_and_the_lowest_threshold_of_its_views() -> None:
    views = [UsageView(HOUR, 0.05), UsageView(3 * HOUR, 0.2), UsageView(15 * MINUTE, 0.01)]
    span = QueryWindow.for_views(views, slot=MINUTE, lookback=6 * HOUR)
    assert (span.window, span.threshold) == (3 * HOUR, 0.01)
    built = build_queries([GR_ENGINE], span=span, templates=QueryTemplates())
    assert built[Stat.SLOTS][0].endswith(")[11700s:60s]")
    assert "[900s]) > 0.01)" in built[Stat.BUSY][0]


def test_one_selector_per_signal_reads_both_label_styles() -> None:
    [text] = queries(GPU_UTIL)[Stat.SLOTS]
    assert 'DCGM_FI_DEV_GPU_UTIL{GPU_I_ID=""}[60s]' in text and "exported_pod" not in text


def test_the_newest_sample_time_is_read_from_the_selector_itself() -> None:
    [text] = queries(GR_ENGINE)[Stat.NEWEST]
    assert (
        "timestamp(DCGM_FI_PROF_GR_ENGINE_ACTIVE) and (DCGM_FI_PROF_GR_ENGINE_ACTIVE >= 0)" in text
    )


def test_a_template_can_be_replaced_and_keeps_its_placeholders() -> None:
    templates = QueryTemplates(slots='max_over_time({metric}{{{matchers}cluster="a"}}[{slot}])')
    [text] = queries(GPU_UTIL, templates=templates)[Stat.SLOTS]
    assert text == '(max_over_time(DCGM_FI_DEV_GPU_UTIL{GPU_I_ID="",cluster="a"}[60s]))[4500s:60s]'


def test_a_template_that_still_divides_by_scale_cannot_be_built() -> None:
    # Since issue 18 a template returns the signal's own unit; Python divides by the scale.
    with pytest.raises(KeyError, match="scale"):
        queries(GPU_UTIL, templates=QueryTemplates(slots="max_over_time({selector}[1m]) / {scale}"))


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


def test_a_matrix_is_read_into_labels_and_points() -> None:
    result = [{"metric": {"UUID": "GPU-1"}, "values": [[60, "0.5"], [120.5, "NaN"]]}]
    [(labels, points)] = parse_matrix(result)
    assert labels == {"UUID": "GPU-1"}
    assert points[0] == (60.0, 0.5) and points[1][0] == 120.5 and math.isnan(points[1][1])


def test_an_instant_vector_is_not_read_as_a_matrix() -> None:
    with pytest.raises(KeyError):
        parse_matrix([{"metric": {}, "value": [1.0, "0.5"]}])


def test_a_matrix_is_read_into_columns_of_step_times_and_values_divided_by_the_scale() -> None:
    result = [{"metric": {"UUID": "GPU-1"}, "values": [[60, "50"], [120.5, "NaN"], [180, "3"]]}]
    [(labels, ends, values)] = parse_columns(result, scale=100)
    assert labels == {"UUID": "GPU-1"} and ends == [60, 120.5, 180]
    assert values[0] == 0.5 and math.isnan(values[1]) and values[2] == 0.03


@pytest.mark.parametrize(
    "result",
    [
        pytest.param([{"metric": {}, "value": [1.0, "0.5"]}], id="an-instant-vector"),
        pytest.param([{"metric": {}, "values": [["60", "0.5"]]}], id="time-not-a-number"),
        pytest.param([{"metric": {}, "values": [[60, "busy"]]}], id="value-not-a-number"),
    ],
)
def test_anything_but_a_matrix_is_refused_as_columns(result: list[object]) -> None:
    with pytest.raises((KeyError, TypeError, ValueError)):
        parse_columns(result)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        pytest.param(
            {"exported_namespace": "ns", "exported_pod": "p", "UUID": "GPU-1"},
            GpuKey("ns", "p", "GPU-1"),
            id="service-monitor-exported-labels",
        ),
        pytest.param(
            {"namespace": "ns", "pod": "p", "UUID": "GPU-1", "GPU_I_ID": "2"},
            GpuKey("ns", "p", "GPU-1", "2"),
            id="honor-labels-plain-labels",
        ),
        pytest.param(
            {
                "namespace": "gpu-operator",
                "pod": "dcgm-x",
                "exported_namespace": "ns",
                "exported_pod": "p",
                "UUID": "GPU-1",
            },
            GpuKey("ns", "p", "GPU-1"),
            id="exported-labels-win-over-the-exporters-own",
        ),
        pytest.param({"exported_pod": "p", "UUID": "GPU-1"}, None, id="no-namespace"),
    ],
)
def test_a_matrix_series_names_its_gpu_by_its_raw_labels(
    labels: dict[str, str], expected: GpuKey | None
) -> None:
    assert workload_gpu_key(labels) == expected


def test_the_default_settings_build_queries_without_leftover_placeholders() -> None:
    built = build_queries(PrometheusSettings().signals, span=SPAN, templates=QueryTemplates())
    for text in every_text(built):
        assert "{selector}" not in text and "{window}" not in text and "{keys}" not in text


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        pytest.param({"Hostname": "node-1", "hostname": "other"}, "node-1", id="dcgm-hostname"),
        pytest.param({"hostname": "node-2"}, "node-2", id="honor-labels-hostname"),
        pytest.param({"gpu_host": "node-3", "Hostname": "x"}, "node-3", id="a-template-s-own"),
        pytest.param({"Hostname": ""}, None, id="none"),
    ],
)
def test_the_host_of_a_series_is_read_from_its_raw_labels(
    labels: dict[str, str], expected: str | None
) -> None:
    assert host_of(labels) == expected
