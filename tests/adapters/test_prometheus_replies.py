"""Parsing a reply body as the session's reply hook does (the envelope, then the result when
first used): the same meaning as the standard library's parse, values as floats."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.adapters.prometheus.promql import parse_columns, parse_vector
from autoscaler.adapters.prometheus.replies import parse_envelope


def as_prometheus_writes(value: float) -> str:
    """A sample value as Prometheus writes it (Go's FormatFloat 'f', -1: shortest digits that
    read back exactly, never an exponent), or NaN/+Inf/-Inf."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return format(Decimal(repr(value)), "f")


def reply(result_type: str, result: list[dict[str, Any]], **extra: object) -> bytes:
    body = {"status": "success", "data": {"resultType": result_type, "result": result}, **extra}
    return json.dumps(body).encode()


def matrix(values: list[float], *, times: list[float] | None = None) -> bytes:
    stamps = times or [1_700_000_000 + 60 * index for index in range(len(values))]
    points = [[at, as_prometheus_writes(value)] for at, value in zip(stamps, values, strict=True)]
    return reply("matrix", [{"metric": {"UUID": "GPU-1"}, "values": points}])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=False), max_size=20))
def test_a_matrix_reads_as_the_standard_library_reads_it(values: list[float]) -> None:
    body = matrix(values)
    ours = parse_columns(parse_envelope(body)["data"]["result"])
    theirs = parse_columns(json.loads(body)["data"]["result"])
    [(labels, ends, found)], [(their_labels, their_ends, expected)] = ours, theirs
    assert (labels, ends) == (their_labels, their_ends)
    assert all(isinstance(value, float) for value in found)
    assert [repr(value) for value in found] == [repr(value) for value in expected]  # NaN too


def test_fractional_step_times_and_a_scale_read_alike() -> None:
    body = matrix([5.0, 7.0, 0.0], times=[1_700_000_000.123, 1_700_000_060.5, 1_700_000_120])
    ours = parse_columns(parse_envelope(body)["data"]["result"], scale=100)
    assert ours == parse_columns(json.loads(body)["data"]["result"], scale=100)
    assert ours[0][2] == [0.05, 0.07, 0.0]


def test_infinities_the_schema_does_not_take_fall_back_to_the_standard_library() -> None:
    body = matrix([1.0, math.inf, -math.inf, math.nan])
    [(_, _, values)] = parse_columns(parse_envelope(body)["data"]["result"])
    assert values[:3] == [1.0, math.inf, -math.inf] and math.isnan(values[3])


def test_a_vector_keeps_its_labels_and_a_float_value() -> None:
    body = reply("vector", [{"metric": {"exported_pod": "p"}, "value": [1_700_000_000, "0.25"]}])
    assert parse_vector(parse_envelope(body)["data"]["result"]) == [({"exported_pod": "p"}, 0.25)]


def test_warnings_are_kept_and_fields_it_does_not_know_are_ignored() -> None:
    body = reply("vector", [], warnings=["partial data"], infos=["x"], stats={"a": 1})
    parsed = parse_envelope(body)
    assert parsed["warnings"] == ["partial data"] and parsed["data"]["result"] == []


@pytest.mark.parametrize(
    "body",
    [
        b'{"status":"success","data":{"resultType":"scalar","result":[1700000000,"2"]}}',
        b'{"status":"error","errorType":"bad_data","error":"parse error"}',
    ],
)
def test_other_replies_mean_what_the_standard_library_reads(body: bytes) -> None:
    assert parse_envelope(body) == json.loads(body)


@pytest.mark.parametrize("body", [b"<html>login</html>", b"", b'{"status": '])
def test_a_body_that_is_not_json_is_a_value_error(body: bytes) -> None:
    with pytest.raises(ValueError, match="not JSON"):
        parse_envelope(body)
