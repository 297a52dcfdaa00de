"""Streams GPU histories to an OpenMetrics file that `promtool tsdb create-blocks-from` reads.

Each metric family is written whole (OpenMetrics forbids interleaving families), each series in time
order, one series at a time, so millions of samples never sit in memory together.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path

from .dcgm import HELP, GpuSeries, metric_value

_WRITE_BUFFER = 1 << 20


def format_labels(labels: dict[str, str]) -> str:
    body = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    return "{" + body + "}"


def format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return f"{value:.6g}"


def write_openmetrics(
    series: Sequence[GpuSeries], path: Path, *, start: int, end: int, step_s: int = 15
) -> int:
    """Write samples at start, start+step, ... <= end (unix seconds); return how many."""
    families = sorted({metric for s in series for metric in s.metrics})
    written = 0
    with path.open("w", encoding="utf-8", buffering=_WRITE_BUFFER) as out:
        for metric in families:
            out.write(f"# HELP {metric} {HELP.get(metric, metric)}\n# TYPE {metric} gauge\n")
            for one in series:
                if metric in one.metrics:
                    lines = list(_sample_lines(one, metric, range(start, end + 1, step_s)))
                    out.write("".join(lines))
                    written += len(lines)
        out.write("# EOF\n")
    return written


def _sample_lines(series: GpuSeries, metric: str, times: range) -> Iterator[str]:
    prefixes: dict[str, str] = {}  # one per exporter pod the series lived under
    texts: dict[float, str] = {}  # values repeat a lot; formatting them is a third of the cost
    utilization, gpu, replaced = series.profile.utilization, series.gpu, bool(series.replaced)
    exporter = series.exporter
    for t in times:
        pct = utilization(t)
        if pct is None:
            continue
        if replaced:
            exporter = series.exporter_at(t)
        prefix = prefixes.get(exporter.pod)
        if prefix is None:
            labels = gpu.stored_labels(exporter, series.style)
            prefix = prefixes[exporter.pod] = metric + format_labels(labels) + " "
        value = metric_value(metric, gpu, pct)
        text = texts.get(value)
        if text is None:
            text = texts[value] = format_value(value)
        yield f"{prefix}{text} {t}\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
