"""The slot matrices read series by series into compact columns (ISSUE 18: 10,000 workloads).

One signal's raw slot matrix at 10,000 workloads is 40,000 series of some 75 points, 75 MB of
JSON. Read whole, as `parse_columns` reads it, it becomes 3 million tuples of two floats and
40,000 label dicts, 600 MB before a single GPU is merged. Here the series are decoded with
their points left as JSON text (`msgspec.Raw`, a view of the body) and only the labels that
name a GPU (and the recorded series' signal); then each series' points become columns one
series at a time: values in an `array('d')` (8 bytes a point instead of 32), step ends in a
list shared by every series with the same ends (the usual case: one subquery, one set of
steps).

The columns mean what `parse_columns` makes of the same result, with the labels cut down to
`GPU_LABELS`: the same step ends, the very same floats (NaN included, the same division by
`scale`), and the same fallbacks: points msgspec's lax mode does not take ("+Inf") are read by
the standard library, and a result that is not a matrix goes to `parse_columns`, which raises
as before. Never mutate the shared ends. NEWEST's rows (`newest_rows`) are read alike, their
labels cut to what names a GPU, its node and its model.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import msgspec

from autoscaler.adapters.prometheus.promql import Columns, Row, parse_columns, parse_vector
from autoscaler.adapters.prometheus.replies import Result


class _GpuLabels(msgspec.Struct):
    """The labels `workload_gpu_key` reads, and the recorded series' signal; None: absent."""

    namespace: str | None = None
    pod: str | None = None
    exported_namespace: str | None = None
    exported_pod: str | None = None
    workload_namespace: str | None = None
    workload_pod: str | None = None
    UUID: str | None = None
    GPU_I_ID: str | None = None
    signal: str | None = None


class _NewestLabels(_GpuLabels):
    """Also what NEWEST tells of a GPU: its node (`host_of`) and model."""

    gpu_host: str | None = None
    hostname: str | None = None
    Hostname: str | None = None
    modelName: str | None = None


GPU_LABELS = _GpuLabels.__struct_fields__
NEWEST_LABELS = _NewestLabels.__struct_fields__


class _Series(msgspec.Struct):
    metric: _GpuLabels
    values: msgspec.Raw


class _Row(msgspec.Struct):
    metric: _NewestLabels
    value: tuple[float, float]


_SERIES = msgspec.json.Decoder(list[_Series])
_ROWS = msgspec.json.Decoder(list[_Row], strict=False)
_POINTS = msgspec.json.Decoder(list[tuple[float, float]], strict=False)


def slot_columns(result: Sequence[Mapping[str, Any]], *, scale: float = 1.0) -> Iterator[Columns]:
    """A matrix's `data.result` as `parse_columns` reads it, labels cut to `GPU_LABELS`,
    values in arrays, one series at a time (merged as they come, a signal's columns are never
    all alive at once); KeyError/TypeError/ValueError when it is not a matrix."""
    series = _decoded(result)
    if series is None:
        for labels, ends, values in parse_columns(result, scale=scale):
            yield _cut(labels), ends, array("d", values)
        return
    shared: Sequence[float] = []
    for one in series:
        ends, values = _points(one.values, scale=scale)
        if ends == shared:
            ends = shared
        shared = ends
        yield _labels(one.metric), ends, values


def newest_rows(result: Sequence[Mapping[str, Any]]) -> Iterator[Row]:
    """An instant vector's `data.result` as `parse_vector` reads it, labels cut to
    `NEWEST_LABELS`, one row at a time (NEWEST: 40,000 rows per signal at 10,000 workloads)."""
    rows = None
    if isinstance(result, Result):
        try:
            rows = _ROWS.decode(result.raw)
        except msgspec.ValidationError:
            rows = None
    if rows is None:
        for labels, value in parse_vector(result):
            yield _cut(labels, NEWEST_LABELS), value
        return
    for row in rows:
        yield _labels(row.metric, NEWEST_LABELS), row.value[1]


def _decoded(result: Sequence[Mapping[str, Any]]) -> list[_Series] | None:
    """The series with their points unread, or None when the result is not a reply's
    unread `Result` or does not fit the matrix schema (left to `parse_columns`)."""
    if not isinstance(result, Result):
        return None
    try:
        return _SERIES.decode(result.raw)
    except msgspec.ValidationError:
        return None


def _points(raw: msgspec.Raw, *, scale: float) -> tuple[Sequence[float], array[float]]:
    try:
        points: list[tuple[Any, Any]] = _POINTS.decode(raw)
    except msgspec.ValidationError:  # "+Inf" and the like: as parse_columns reads them
        series = [{"metric": {}, "values": json.loads(bytes(raw))}]
        [(_, ends, values)] = parse_columns(series, scale=scale)
        return ends, array("d", values)
    ends = [at for at, _ in points]
    if scale == 1:
        return ends, array("d", [value for _, value in points])
    return ends, array("d", [value / scale for _, value in points])


def _labels(metric: _GpuLabels, names: tuple[str, ...] = GPU_LABELS) -> dict[str, str]:
    return {name: value for name in names if (value := getattr(metric, name)) is not None}


def _cut(labels: Mapping[str, str], names: tuple[str, ...] = GPU_LABELS) -> dict[str, str]:
    return {name: labels[name] for name in names if name in labels}
