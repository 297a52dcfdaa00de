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
as before. Never mutate the shared ends.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from autoscaler.adapters.prometheus.promql import Columns, parse_columns
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


GPU_LABELS = _GpuLabels.__struct_fields__


class _Series(msgspec.Struct):
    metric: _GpuLabels
    values: msgspec.Raw


_SERIES = msgspec.json.Decoder(list[_Series])
_POINTS = msgspec.json.Decoder(list[tuple[float, float]], strict=False)


def slot_columns(result: Sequence[Mapping[str, Any]], *, scale: float = 1.0) -> list[Columns]:
    """A matrix's `data.result` as `parse_columns` reads it, labels cut to `GPU_LABELS`,
    values in arrays; KeyError/TypeError/ValueError when it is not a matrix."""
    series = _decoded(result)
    if series is None:
        return [
            (_cut(labels), ends, array("d", values))
            for labels, ends, values in parse_columns(result, scale=scale)
        ]
    found: list[Columns] = []
    shared: Sequence[float] = []
    for one in series:
        ends, values = _points(one.values, scale=scale)
        if ends == shared:
            ends = shared
        shared = ends
        found.append((_labels(one.metric), ends, values))
    return found


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


def _labels(metric: _GpuLabels) -> dict[str, str]:
    return {name: value for name in GPU_LABELS if (value := getattr(metric, name)) is not None}


def _cut(labels: Mapping[str, str]) -> dict[str, str]:
    return {name: labels[name] for name in GPU_LABELS if name in labels}
