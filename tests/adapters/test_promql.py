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
    parse_matrix,
    parse_vector,
    selector,
    workload_gpu_key,
)
from autoscaler.domain.gpus import GpuKey
from autoscaler.domain.models import UsageView
from autoscaler.settings.tree import PrometheusSettings, SignalSettings

HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)
SPAN = QueryWindow(window=HOUR, slot=MINUTE, lookback=timedelta(hours=24), threshold=0.05)
GR_ENGINE = SignalSettings(metric="DCGM_FI_PROF_GR_ENGINE_ACTIVE", scale=1, valid_on_mig=True)
GPU_UTIL = SignalSettings(metric="DCGM_FI_DEV_GPU_UTIL", scale=100, valid_on_mig=False)


def queries(*signals: SignalSettings, templates: QueryTemplates | None = None) -> dict[Stat, str]:
    return build_queries(signals, span=SPAN, templates=templates or QueryTemplates())


# -- building the queries ------------------------------------------------------------------


def test_a_read_is_one_query_per_measure_whatever_the_number_of_signals() -> None:
    assert set(queries(GR_ENGINE)) == set(queries(GR_ENGINE, GPU_UTIL)) == set(Stat)


def test_every_query_covers_every_signal_tagged_so_that_or_keeps_them_all() -> None:
    for text in queries(GR_ENGINE, GPU_UTIL).values():
        assert '"signal", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"' in text
        assert '"signal", "DCGM_FI_DEV_GPU_UTIL"' in text
        assert " or " in text


def test_the_matrices_merge_each_label_style_by_its_raw_labels_and_never_by_instance() -> None:
    for stat in (Stat.SLOTS, Stat.BUSY):
        text = queries(GR_ENGINE)[stat]
        assert text.startswith("(max by (exported_namespace, exported_pod, UUID, GPU_I_ID) (")
        assert " or max by (namespace, pod, UUID, GPU_I_ID) (" in text
        assert "instance" not in text


def test_the_newest_samples_are_merged_per_gpu_with_host_and_model() -> None:
    text = queries(GR_ENGINE)[Stat.NEWEST]
    assert text.startswith(
        "max by (workload_namespace, workload_pod, UUID, GPU_I_ID, gpu_host, modelName) ("
    )


def test_a_signal_that_reads_zero_on_mig_skips_mig_instances_in_the_query() -> None:
    assert selector(GPU_UTIL) == 'DCGM_FI_DEV_GPU_UTIL{GPU_I_ID=""}'
    assert selector(GR_ENGINE) == "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
    for text in queries(GPU_UTIL).values():
        assert "DCGM_FI_DEV_GPU_UTIL[" not in text
        assert "DCGM_FI_DEV_GPU_UTIL)" not in text


def test_queries_carry_no_namespace_matcher_so_thanos_tenancy_can_add_its_own() -> None:
    for text in queries(GR_ENGINE, GPU_UTIL).values():
        assert re.search(r'namespace\s*(=|!=|=~|!~)\s*"', text) is None


def test_the_newest_samples_take_the_workload_labels_from_exported_labels_when_present() -> None:
    text = queries(GR_ENGINE)[Stat.NEWEST]
    plain = text.index('"workload_namespace", "$1", "namespace", "(.+)"')
    exported = text.index('"workload_namespace", "$1", "exported_namespace", "(.+)"')
    assert plain < exported  # applied later, so it wins
    assert '"workload_pod", "$1", "exported_pod", "(.+)"' in text


def test_spans_threshold_and_scale_are_written_into_the_queries() -> None:
    built = queries(GPU_UTIL)
    assert "[60s]) / 100.0" in built[Stat.SLOTS]
    assert built[Stat.SLOTS].endswith(")[4500s:60s]")  # the window and one coarse step
    assert "[900s]) / 100.0 > 0.05" in built[Stat.BUSY]
    assert built[Stat.BUSY].endswith(")[86400s:900s]")  # coarse steps over the lookback


def test_one_read_is_built_for_the_longest_window_and_the_lowest_threshold_of_its_views() -> None:
    views = [UsageView(HOUR, 0.05), UsageView(3 * HOUR, 0.2), UsageView(15 * MINUTE, 0.01)]
    span = QueryWindow.for_views(views, slot=MINUTE, lookback=6 * HOUR)
    assert (span.window, span.threshold) == (3 * HOUR, 0.01)
    built = build_queries([GR_ENGINE], span=span, templates=QueryTemplates())
    assert built[Stat.SLOTS].endswith(")[11700s:60s]")
    assert "> 0.01, " in built[Stat.BUSY]


def test_each_label_style_has_its_own_selectors_in_the_matrices() -> None:
    text = queries(GPU_UTIL)[Stat.SLOTS]
    assert 'DCGM_FI_DEV_GPU_UTIL{GPU_I_ID="",exported_pod!=""}[60s]' in text
    assert 'DCGM_FI_DEV_GPU_UTIL{GPU_I_ID="",exported_pod=""}[60s]' in text


def test_the_newest_sample_time_is_read_from_the_selector_itself() -> None:
    text = queries(GR_ENGINE)[Stat.NEWEST]
    assert (
        "timestamp(DCGM_FI_PROF_GR_ENGINE_ACTIVE) and (DCGM_FI_PROF_GR_ENGINE_ACTIVE >= 0)" in text
    )


def test_a_template_can_be_replaced_and_keeps_its_placeholders() -> None:
    templates = QueryTemplates(
        slots='max_over_time({metric}{{{matchers}cluster="a"}}[{slot}]) / {scale}'
    )
    text = queries(GPU_UTIL, templates=templates)[Stat.SLOTS]
    assert 'DCGM_FI_DEV_GPU_UTIL{GPU_I_ID="",exported_pod!="",cluster="a"}[60s]) / 100.0' in text
    assert 'DCGM_FI_DEV_GPU_UTIL{GPU_I_ID="",exported_pod="",cluster="a"}[60s]) / 100.0' in text


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
    for text in built.values():
        assert "{selector}" not in text and "{window}" not in text and "{keys}" not in text
