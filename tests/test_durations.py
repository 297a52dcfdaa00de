"""Durations are written as Kubernetes and KEDA users write them, everywhere one is read:
the settings, the API's request bodies and the command line share one parser."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.api.schemas.requests import ExemptionRequest
from autoscaler.domain.durations import (
    LONGEST,
    Split,
    TooLong,
    format_duration,
    parse_duration,
    spelling_pattern,
)
from autoscaler.settings.tree import Settings

CHART_SCHEMA = Path(__file__).resolve().parents[1] / "charts/idle-gpu-autoscaler/values.schema.json"


def chart_accepts(definition: str, value: Any) -> bool:
    """Whether the chart's values schema lets `value` through as a `definition`."""
    schema = json.loads(CHART_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(
        {"$ref": f"#/definitions/{definition}", "definitions": schema["definitions"]}
    ).is_valid(value)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("90", 90, id="bare-number-is-seconds"),
        pytest.param("90s", 90, id="seconds"),
        pytest.param("15m", 900, id="minutes"),
        pytest.param("2h", 7200, id="hours"),
        pytest.param("7d", 604800, id="days"),
        pytest.param("1.5h", 5400, id="fractional-hours"),
        pytest.param("250ms", 0.25, id="milliseconds"),
        pytest.param("1h30m", 5400, id="hours-and-minutes"),
        pytest.param("1d2h3m4s", 93784, id="every-unit-from-days-to-seconds"),
        pytest.param("2h45m30.5s", 9930.5, id="fractional-last-part"),
        pytest.param("1m30s500ms", 90.5, id="go-milliseconds-after-seconds"),
        pytest.param("300us", 0.0003, id="go-microseconds"),
        pytest.param("1h 30m", 5400, id="spaces-between-parts"),
        pytest.param("+1h", 3600, id="an-explicit-plus-sign"),
        pytest.param("0s", 0, id="zero"),
    ],
)
def test_a_duration_parses_and_prints_back_to_the_same_length(text: str, seconds: float) -> None:
    span = parse_duration(text)
    assert span == timedelta(seconds=seconds)
    assert parse_duration(format_duration(span)) == span


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        pytest.param("-1h", "'-1h' is negative", id="negative"),
        pytest.param("-1h30m", "'-1h30m' is negative", id="negative-compound"),
        pytest.param("soon", "is not a duration such as 90s, 15m, 1h30m or 2d", id="a-word"),
        pytest.param("1h30", "is not a duration", id="a-compound-ending-without-a-unit"),
        pytest.param("1w", "is not a duration", id="weeks-are-not-a-unit"),
        pytest.param("h", "is not a duration", id="a-unit-without-a-number"),
        pytest.param("", "is not a duration", id="empty"),
        pytest.param("999999999999d", "is too long to be a duration", id="beyond-timedelta"),
        pytest.param("99999999h", "too long to be a duration: at most 36500d", id="past-longest"),
    ],
)
def test_a_duration_that_cannot_be_read_is_refused_saying_why(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "spelling"),
    [
        pytest.param(45, "45s", id="seconds"),
        pytest.param(3600, "1h", id="one-exact-unit"),
        pytest.param(5400, "90m", id="exact-in-minutes-stays-one-unit"),
        pytest.param(90, "1m30s", id="go-compound-when-no-unit-is-exact"),
        pytest.param(93784, "1d2h3m4s", id="every-part"),
        pytest.param(0.25, "0.25s", id="under-a-second"),
    ],
)
def test_a_duration_prints_in_one_exact_unit_or_as_a_compound(
    seconds: float, spelling: str
) -> None:
    assert format_duration(timedelta(seconds=seconds)) == spelling


@pytest.mark.parametrize(
    ("seconds", "units", "split", "spelling"),
    [
        pytest.param(5400, "dhms", "always", "1h30m", id="a-warnings-lead-in-every-part"),
        pytest.param(0, "dhms", "always", "0s", id="no-lead"),
        pytest.param(3600, "ms", "never", "60m", id="usage-reasons-count-in-minutes"),
        pytest.param(61.5, "ms", "never", "61s", id="usage-reasons-count-whole-seconds"),
        pytest.param(86400, "hms", "never", "24h", id="guard-reasons-stop-at-hours"),
        pytest.param(90, "hms", "never", "90s", id="never-split-into-minutes-and-seconds"),
        pytest.param(86400, "hms", "when-uneven", "24h", id="snooze-buttons-compare-by-hours"),
        pytest.param(5400, "hm", "never", "90m", id="backtest-window-labels"),
    ],
)
def test_reasons_labels_and_buttons_are_the_same_formatter_with_their_units_and_split(
    seconds: float, units: str, split: Split, spelling: str
) -> None:
    assert format_duration(timedelta(seconds=seconds), units=units, split=split) == spelling


def test_a_compound_duration_is_a_valid_setting() -> None:
    settings = Settings.model_validate({"policy": {"idleWindow": "1h30m"}})
    assert settings.policy.idle_window == timedelta(minutes=90)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("1h30m", 5400, id="compound"),
        pytest.param("4h", 14400, id="one-unit"),
        pytest.param("90", 90, id="bare-seconds"),
    ],
)
def test_a_compound_duration_is_a_valid_exemption_request(text: str, seconds: int) -> None:
    request = ExemptionRequest.model_validate({"duration": text, "reason": "presenting"})
    assert request.duration == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("-1h", "must be longer than zero", id="negative"),
        pytest.param("0s", "must be longer than zero", id="zero"),
        pytest.param("1h30", "is not a duration such as 90m, 4h, 1h30m or 2d", id="no-unit"),
    ],
)
def test_an_exemption_request_refuses_a_duration_that_is_not_a_length(
    text: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        ExemptionRequest.model_validate({"duration": text, "reason": "presenting"})


@pytest.mark.parametrize(
    ("definition", "value", "accepted"),
    [
        pytest.param("duration", "1h30m", True, id="compound"),
        pytest.param("duration", "90", True, id="bare-seconds"),
        pytest.param("duration", "0s", True, id="zero-is-a-duration"),
        pytest.param("duration", "-1h", False, id="negative"),
        pytest.param("duration", "soon", False, id="a-word"),
        pytest.param("positiveDuration", "1m30s", True, id="positive-compound"),
        pytest.param("positiveDuration", "0h0m", False, id="zero-compound-is-not-positive"),
        pytest.param("wholeSeconds", "1m30s", True, id="whole-seconds-compound"),
        pytest.param("wholeSeconds", "1.5s", False, id="a-fraction-is-not-whole"),
    ],
)
def test_the_charts_values_schema_reads_durations_like_the_service(
    definition: str, value: str, accepted: bool
) -> None:
    assert chart_accepts(definition, value) is accepted
    if accepted:
        parse_duration(value)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("36501d", id="a-day-past-a-century"),
        pytest.param("99999999h", id="hours-that-overflow-now-plus-it"),
        pytest.param(10**12, id="seconds-as-a-number"),
        pytest.param(float("inf"), id="infinite"),
        pytest.param("9" * 400 + "s", id="digits-past-a-float"),
        pytest.param(timedelta(days=36501), id="a-timedelta"),
    ],
)
def test_every_duration_is_at_most_a_century_and_the_refusal_names_it(value: object) -> None:
    with pytest.raises(TooLong, match="at most 36500d"):
        parse_duration(value)
    assert parse_duration("36500d") == LONGEST == timedelta(days=36500)


SPANS = st.timedeltas(min_value=timedelta(microseconds=1), max_value=LONGEST)


@settings(max_examples=300, deadline=None)
@given(SPANS)
def test_every_duration_up_to_the_longest_is_written_in_the_apis_spelling(span: timedelta) -> None:
    written = format_duration(span)
    assert re.fullmatch(spelling_pattern(LONGEST), written), written
    assert parse_duration(written) == span


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_every_text_in_the_spelling_is_a_duration_over_zero_and_up_to_its_longest(
    data: st.DataObject,
) -> None:
    longest = data.draw(st.sampled_from([LONGEST, timedelta(days=90), timedelta(days=1)]))
    text = data.draw(st.from_regex(spelling_pattern(longest), fullmatch=True))
    assert timedelta(0) < parse_duration(text) <= longest


@pytest.mark.parametrize(
    ("text", "taken"),
    [
        pytest.param("90d", True, id="the-longest-itself"),
        pytest.param("90.000d", True, id="the-longest-with-zero-decimals"),
        pytest.param("2160h", True, id="the-longest-in-hours"),
        pytest.param("89d23h59m59.999999s", True, id="just-below-the-longest"),
        pytest.param("0.000001s", True, id="one-microsecond"),
        pytest.param("90.5d", False, id="a-fraction-past-the-longest"),
        pytest.param("89d24h", False, id="a-later-part-of-a-whole-unit-before-it"),
        pytest.param("1h90m", False, id="minutes-past-an-hour-after-hours"),
        pytest.param("30m1h", False, id="smaller-unit-first"),
        pytest.param("0s", False, id="zero"),
        pytest.param("0h0m", False, id="zero-compound"),
        pytest.param("0.0000001s", False, id="under-a-microsecond"),
        pytest.param("1w", False, id="not-a-unit"),
    ],
)
def test_the_spelling_takes_exactly_the_durations_up_to_its_longest(text: str, taken: bool) -> None:
    assert (re.fullmatch(spelling_pattern(timedelta(days=90)), text) is not None) is taken
