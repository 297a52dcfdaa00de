"""The PromQL of one usage read: four fleet-wide queries, whatever the number of GPUs.

Each query is built from a per-signal template, one per entry of `prometheus.signals`; the
signals are tagged with a `signal` label (so `or` keeps them all) and merged per GPU with
`max by (workload_namespace, workload_pod, UUID, GPU_I_ID)`. Grouping by those labels alone
also merges the series a GPU leaves behind when its exporter pod is replaced.

Label mapping happens in the server: behind a ServiceMonitor Prometheus keeps the exporter
pod's namespace/pod and renames the workload's to exported_namespace/exported_pod; with
honorLabels the workload's win. `relabelled()` copies exported_* when present, else the
plain label, into workload_namespace/workload_pod (and Hostname/hostname into gpu_host).

Template placeholders: {selector} (metric and matchers; {renamed} and {kept} add
`exported_pod!=""` and `exported_pod=""`), {scale} (divide to get a 0..1 ratio),
{threshold} (ratio), {keys}, and the PromQL durations {window}, {slot}, {lookback},
{coarse} and {recent} (window + coarse). Each template returns one series per GPU (or per
GPU and exporter series) carrying the key labels.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from autoscaler.domain.models import GpuKey, GpuUsage
from autoscaler.settings.tree import SignalSettings

# Our own label names: writing into `namespace`/`pod` could make two series of a replaced
# exporter identical (same IP) before they are merged, which Prometheus refuses.
NAMESPACE = "workload_namespace"
POD = "workload_pod"
HOST = "gpu_host"
MIG_LABEL = "GPU_I_ID"
KEY_LABELS = (NAMESPACE, POD, "UUID", MIG_LABEL)
INFO_LABELS = (HOST, "modelName")
COARSE_STEP = timedelta(minutes=15)

# target ← sources, later ones winning when present and non-empty.
LABEL_SOURCES = (
    (NAMESPACE, ("namespace", "exported_namespace")),
    (POD, ("pod", "exported_pod")),
)
HOST_SOURCES = ((HOST, ("hostname", "Hostname")),)


def relabelled(expr: str, sources: tuple[tuple[str, tuple[str, ...]], ...] = LABEL_SOURCES) -> str:
    """`expr` with the workload's namespace and pod copied into our own labels."""
    for target, candidates in sources:
        for source in candidates:
            expr = f'label_replace({expr}, "{target}", "$1", "{source}", "(.+)")'
    return expr


class Stat(enum.Enum):
    """What a query measures per GPU, and the labels its result is grouped by."""

    PEAK = "peak"  # highest ratio over the window (NaN only when every sample is NaN)
    COVERAGE = "coverage"  # number of slots of the window holding a real sample
    LAST_BUSY = "last_busy"  # end of the last slot above the threshold, in the lookback
    NEWEST = "newest"  # time of the newest real sample (staleness)

    @property
    def group_labels(self) -> tuple[str, ...]:
        return (*KEY_LABELS, *INFO_LABELS) if self is Stat.NEWEST else KEY_LABELS


# max_over_time ignores NaN unless every sample is NaN, so a NaN peak means "no real value".
PEAK = relabelled("max_over_time({selector}[{window}])") + " / {scale}"

# A slot counts when it holds a real sample (NaN fails `>= 0`) from any series of the GPU:
# split series are merged per slot before counting, so an overlap is never counted twice.
# The merge inside the subquery groups by the raw labels of each label style, because a
# label_replace there would run once per series per slot (several times slower).
COVERAGE = relabelled(
    "count_over_time((max by (exported_namespace, exported_pod, UUID, GPU_I_ID)"
    " (max_over_time({renamed}[{slot}])) >= 0)[{window}:{slot}])"
    " or count_over_time((max by (namespace, pod, UUID, GPU_I_ID)"
    " (max_over_time({kept}[{slot}])) >= 0)[{window}:{slot}])"
)

# timestamp() of a non-selector expression is the evaluation time: here the end of each
# slot in which some sample was above the threshold (short bursts between steps included).
# Slot precision over the window plus one coarse step (so rounding up never moves a busy
# time into the window); coarse steps further back, only for reporting "idle since".
LAST_BUSY = relabelled(
    "max_over_time(timestamp(max_over_time({selector}[{slot}]) / {scale} > {threshold})"
    "[{recent}:{slot}])"
    " or max_over_time(timestamp(max_over_time({selector}[{coarse}]) / {scale} > {threshold})"
    "[{lookback}:{coarse}])"
)

# timestamp() applied directly to a selector returns the sample's own time; `and ... >= 0`
# skips a NaN newest sample. The instant selector sees back as far as the server's
# lookback delta (5m by default), which must not be shorter than policy.staleAfter.
NEWEST = relabelled("timestamp({selector}) and ({selector} >= 0)", LABEL_SOURCES + HOST_SOURCES)


@dataclass(frozen=True)
class QueryTemplates:
    """Per-signal templates; the defaults are this module's constants."""

    peak: str = PEAK
    coverage: str = COVERAGE
    last_busy: str = LAST_BUSY
    newest: str = NEWEST

    def for_stat(self, stat: Stat) -> str:
        template: str = getattr(self, stat.value)
        return template


@dataclass(frozen=True)
class QueryWindow:
    """The spans one read looks at."""

    window: timedelta
    slot: timedelta
    lookback: timedelta
    threshold: float

    @property
    def coarse(self) -> timedelta:
        """The step of the last-busy search beyond the window: reading a day of samples
        costs the same at any step, evaluating a day of one-minute steps does not."""
        return max(self.slot, COARSE_STEP)

    @property
    def recent(self) -> timedelta:
        return self.window + self.coarse


_SPANS = ("window", "slot", "lookback", "coarse", "recent")


def build_queries(
    signals: Sequence[SignalSettings], *, span: QueryWindow, templates: QueryTemplates
) -> dict[Stat, str]:
    """One query per `Stat`, each covering every signal."""
    return {stat: _combined(stat, signals, span, templates.for_stat(stat)) for stat in Stat}


def _combined(
    stat: Stat, signals: Sequence[SignalSettings], span: QueryWindow, template: str
) -> str:
    tagged = [
        f'label_replace({_fill(template, signal, span)}, "signal", "{signal.metric}", "", "")'
        for signal in signals
    ]
    return f"max by ({', '.join(stat.group_labels)}) ({' or '.join(tagged)})"


def _fill(template: str, signal: SignalSettings, span: QueryWindow) -> str:
    return template.format(
        selector=selector(signal),
        renamed=selector(signal, 'exported_pod!=""'),
        kept=selector(signal, 'exported_pod=""'),
        scale=_number(signal.scale),
        threshold=_number(span.threshold),
        keys=", ".join(KEY_LABELS),
        **{name: duration(getattr(span, name)) for name in _SPANS},
    )


def selector(signal: SignalSettings, *matchers: str) -> str:
    """The metric and `matchers`; a signal that says nothing on MIG instances skips them."""
    every = matchers if signal.valid_on_mig else (f'{MIG_LABEL}=""', *matchers)
    return f"{signal.metric}{{{','.join(every)}}}" if every else signal.metric


def duration(span: timedelta) -> str:
    """A PromQL duration in whole milliseconds or seconds (`90s`, `1500ms`)."""
    milliseconds = round(span.total_seconds() * 1000)
    if milliseconds <= 0:
        raise ValueError(f"a query span must be positive, got {span}")
    if milliseconds % 1000:
        return f"{milliseconds}ms"
    return f"{milliseconds // 1000}s"


def _number(value: float) -> str:
    return repr(float(value))


def gpu_key(labels: Mapping[str, str]) -> GpuKey | None:
    """The GPU a result row speaks of; None when the row lacks the labels that name one."""
    namespace, pod, uuid = labels.get(NAMESPACE), labels.get(POD), labels.get("UUID")
    if not namespace or not pod or not uuid:
        return None
    return GpuKey(namespace, pod, uuid, labels.get(MIG_LABEL) or None)


def slots_in(window: timedelta, slot: timedelta) -> float:
    """How many slots the window holds: the denominator of coverage."""
    return window / slot


Row = tuple[Mapping[str, str], float]


def parse_vector(result: Sequence[Mapping[str, Any]]) -> list[Row]:
    """An instant vector's `data.result` as (labels, value); KeyError/TypeError/ValueError
    when it is not one."""
    return [(dict(item["metric"]), float(item["value"][1])) for item in result]


def usage_by_pod(
    rows: Mapping[Stat, Sequence[Row]], *, window: timedelta, slot: timedelta
) -> dict[tuple[str, str], tuple[GpuUsage, ...]]:
    """Every GPU any query spoke of, grouped by (namespace, pod); a GPU missing from a
    query gets that query's "nothing known" value (no peak, no coverage, no time)."""
    peaks = _by_key(rows[Stat.PEAK])
    slots_held = _by_key(rows[Stat.COVERAGE])
    last_busy = _by_key(rows[Stat.LAST_BUSY])
    newest = _newest(rows[Stat.NEWEST])
    slots = slots_in(window, slot)
    grouped: dict[tuple[str, str], list[GpuUsage]] = {}
    for key in sorted(peaks.keys() | slots_held.keys() | last_busy.keys() | newest.keys()):
        sample_at, host, model = newest.get(key, (None, None, None))
        usage = GpuUsage(
            key=key,
            peak=_finite(peaks.get(key)),
            coverage=min(1.0, (_finite(slots_held.get(key)) or 0.0) / slots),
            last_sample_at=sample_at,
            last_busy_at=_time(last_busy.get(key)),
            hostname=host,
            model=model,
        )
        grouped.setdefault((key.namespace, key.pod), []).append(usage)
    return {pod: tuple(gpus) for pod, gpus in grouped.items()}


def _by_key(rows: Sequence[Row]) -> dict[GpuKey, float]:
    """Value per GPU; the highest when a template left a GPU split over several rows."""
    values: dict[GpuKey, float] = {}
    for labels, value in rows:
        key = gpu_key(labels)
        if key is not None:
            values[key] = max(values.get(key, value), value, key=_nan_lowest)
    return values


def _newest(rows: Sequence[Row]) -> dict[GpuKey, tuple[datetime | None, str | None, str | None]]:
    """Newest sample time per GPU, with the host and model of the series that had it."""
    best: dict[GpuKey, tuple[float, str | None, str | None]] = {}
    for labels, value in rows:
        key = gpu_key(labels)
        if key is not None and math.isfinite(value) and value >= best.get(key, (-1.0,))[0]:
            best[key] = (value, labels.get(HOST) or None, labels.get("modelName") or None)
    return {key: (_time(at), host, model) for key, (at, host, model) in best.items()}


def _nan_lowest(value: float) -> float:
    return -math.inf if math.isnan(value) else value


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _time(value: float | None) -> datetime | None:
    seconds = _finite(value)
    return None if seconds is None else datetime.fromtimestamp(seconds, tz=UTC)
