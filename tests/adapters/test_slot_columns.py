"""The compact read of a slot matrix means what `json.loads` and `parse_columns` make of it:
the same step ends and floats per series (NaN, infinities, a scale), the labels that name a
GPU, and so the same steps per GPU once merged; the fallbacks read alike. NEWEST's rows
likewise, with the GPU's node and model."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.adapters.prometheus.promql import (
    HOST_SOURCES,
    LABEL_SOURCES,
    MIG_LABEL,
    Columns,
    host_of,
    parse_columns,
    parse_vector,
    workload_gpu_key,
)
from autoscaler.adapters.prometheus.recording_rules import SIGNAL_LABEL
from autoscaler.adapters.prometheus.replies import Result, parse_envelope
from autoscaler.adapters.prometheus.slot_columns import (
    GPU_LABELS,
    NEWEST_LABELS,
    newest_rows,
    slot_columns,
)
from autoscaler.adapters.prometheus.views import Steps, merged_steps
from tests.adapters.test_prometheus_replies import as_prometheus_writes

T0 = 1_700_000_000
SHARED_ENDS = [T0 + 60 * index for index in range(6)]


def result_of(body: bytes) -> Result:
    result = parse_envelope(body)["data"]["result"]
    assert isinstance(result, Result)
    return result


def matrix_body(series: list[tuple[dict[str, str], list[float], list[float]]]) -> bytes:
    result = [
        {
            "metric": labels,
            "values": [[at, as_prometheus_writes(v)] for at, v in zip(ends, values, strict=True)],
        }
        for labels, ends, values in series
    ]
    body = {"status": "success", "data": {"resultType": "matrix", "result": result}}
    return json.dumps(body).encode()


def the_old_read(body: bytes, *, scale: float) -> list[Columns]:
    return parse_columns(json.loads(body)["data"]["result"], scale=scale)


def bits(values: Sequence[float]) -> list[str]:
    return [repr(value) for value in values]  # NaN equal to NaN, -0.0 apart from 0.0


def assert_same_columns(ours: Sequence[Columns], theirs: Sequence[Columns]) -> None:
    for (labels, ends, values), (their_labels, their_ends, their_values) in zip(
        ours, theirs, strict=True
    ):
        assert labels == {name: their_labels[name] for name in GPU_LABELS if name in their_labels}
        assert list(ends) == list(their_ends)
        assert bits(values) == bits(their_values)


def assert_same_steps(ours: Mapping[Any, Steps], theirs: Mapping[Any, Steps]) -> None:
    assert list(ours) == list(theirs)
    for key, steps in ours.items():
        assert list(steps.ends) == list(theirs[key].ends)
        assert bits(steps.values) == bits(theirs[key].values)


def gpu_labels() -> st.SearchStrategy[dict[str, str]]:
    """Either label style (or both, the workload's winning), few names so series of one GPU
    split (a replaced exporter), sometimes a MIG instance, labels no GPU key reads."""
    name = st.sampled_from(["a", "b", ""])
    style = st.fixed_dictionaries(
        {},
        optional={
            "namespace": name,
            "pod": name,
            "exported_namespace": name,
            "exported_pod": name,
            "UUID": st.sampled_from(["GPU-1", "GPU-2"]),
            "GPU_I_ID": st.sampled_from(["", "1"]),
            "Hostname": name,
            "modelName": st.just("NVIDIA A100"),
            "instance": st.sampled_from(["10.0.0.1:9400", "10.0.0.2:9400"]),
        },
    )
    return style


VALUES = st.floats(allow_nan=True, allow_infinity=True, width=64)


@st.composite
def a_series(draw: st.DrawFn) -> tuple[dict[str, str], list[float], list[float]]:
    """Usually the shared step ends; sometimes some of them, or fractional ones."""
    ends = draw(
        st.one_of(
            st.just(SHARED_ENDS),
            st.lists(st.sampled_from(SHARED_ENDS), unique=True).map(sorted),
            st.just([T0 + 0.5, T0 + 60.123]),
        )
    )
    values = draw(st.lists(VALUES, min_size=len(ends), max_size=len(ends)))
    return draw(gpu_labels()), ends, values


@settings(max_examples=300, deadline=None)
@given(st.lists(a_series(), max_size=8), st.sampled_from([1.0, 100.0]))
def test_a_slot_matrix_reads_as_the_standard_library_and_parse_columns_read_it(
    series: list[tuple[dict[str, str], list[float], list[float]]], scale: float
) -> None:
    body = matrix_body(series)
    ours = list(slot_columns(result_of(body), scale=scale))
    assert_same_columns(ours, the_old_read(body, scale=scale))
    assert_same_steps(merged_steps(ours), merged_steps(the_old_read(body, scale=scale)))


@settings(max_examples=100, deadline=None)
@given(st.lists(a_series(), max_size=6), st.sampled_from([1.0, 100.0]))
def test_the_compact_read_and_its_fallback_on_a_parsed_result_agree(
    series: list[tuple[dict[str, str], list[float], list[float]]], scale: float
) -> None:
    body = matrix_body(series)
    parsed = json.loads(body)["data"]["result"]
    assert_same_columns(
        list(slot_columns(result_of(body), scale=scale)), list(slot_columns(parsed, scale=scale))
    )


def test_series_with_the_same_step_ends_share_one_list() -> None:
    labels = [{"UUID": f"GPU-{i}", "pod": "p", "namespace": "n"} for i in range(3)]
    body = matrix_body([(one, SHARED_ENDS, [0.5] * 6) for one in labels])
    first, second, third = slot_columns(result_of(body))  # read one at a time
    assert first[1] is second[1] is third[1]


def test_a_series_with_an_infinity_is_read_by_the_standard_library_alone() -> None:
    body = matrix_body(
        [
            ({"UUID": "GPU-1"}, SHARED_ENDS[:3], [1.0, math.inf, math.nan]),
            ({"UUID": "GPU-2"}, SHARED_ENDS[:1], [0.25]),
        ]
    )
    ours = list(slot_columns(result_of(body), scale=100))
    assert_same_columns(ours, the_old_read(body, scale=100))
    assert bits(ours[0][2]) == ["0.01", "inf", "nan"]


@pytest.mark.parametrize(
    "result",
    [
        b'[{"metric": {"UUID": "GPU-1"}, "value": [1700000000, "1"]}]',  # a vector
        b'[1700000000, "2"]',  # a scalar
        b'[{"values": [[1700000000, "1"]]}]',  # no labels
    ],
    ids=["vector", "scalar", "no-metric"],
)
def test_a_result_that_is_not_a_matrix_fails_as_parse_columns_fails(result: bytes) -> None:
    body = b'{"status": "success", "data": {"resultType": "x", "result": %s}}' % result
    with pytest.raises((KeyError, TypeError, ValueError)) as theirs:
        parse_columns(json.loads(body)["data"]["result"])
    with pytest.raises(theirs.type):
        list(slot_columns(result_of(body)))


def test_an_unread_result_reads_as_a_whole_parse_when_used() -> None:
    body = matrix_body([({"UUID": "GPU-1"}, SHARED_ENDS[:2], [0.5, math.nan])])
    result = result_of(body)
    assert result.is_list() and len(result) == 1
    assert result[0]["metric"] == {"UUID": "GPU-1"}
    assert [at for at, _ in result[0]["values"]] == SHARED_ENDS[:2]


@pytest.mark.parametrize(("text", "is_list"), [(b"[]", True), (b"{}", False), (b"null", False)])
def test_only_a_json_array_is_a_result(text: bytes, is_list: bool) -> None:
    body = b'{"status": "success", "data": {"resultType": "matrix", "result": %s}}' % text
    assert result_of(body).is_list() == is_list


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            gpu_labels(),
            st.dictionaries(
                st.sampled_from(["hostname", "gpu_host", "job"]), st.sampled_from(["", "n1"])
            ),
            st.floats(allow_nan=True, allow_infinity=True, width=64),
        ),
        max_size=8,
    )
)
def test_newest_rows_read_as_parse_vector_reads_them(
    rows: list[tuple[dict[str, str], dict[str, str], float]],
) -> None:
    result = [
        {"metric": labels | more, "value": [T0 + 0.25, as_prometheus_writes(value)]}
        for labels, more, value in rows
    ]
    body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}})
    ours = list(newest_rows(result_of(body.encode())))
    theirs = parse_vector(json.loads(body)["data"]["result"])
    assert [labels for labels, _ in ours] == [
        {name: labels[name] for name in NEWEST_LABELS if name in labels} for labels, _ in theirs
    ]
    assert bits([value for _, value in ours]) == bits([value for _, value in theirs])
    assert [(workload_gpu_key(a), host_of(a), a.get("modelName")) for a, _ in ours] == [
        (workload_gpu_key(b), host_of(b), b.get("modelName")) for b, _ in theirs
    ]


def test_the_labels_kept_are_every_label_the_merge_and_newest_read() -> None:
    mapped = {name for _, sources in LABEL_SOURCES for name in sources}
    named = {target for target, _ in LABEL_SOURCES} | {"UUID", MIG_LABEL, SIGNAL_LABEL}
    assert set(GPU_LABELS) == mapped | named
    host = {HOST_SOURCES[0][0], *HOST_SOURCES[0][1]}
    assert set(NEWEST_LABELS) == set(GPU_LABELS) | host | {"modelName"}
