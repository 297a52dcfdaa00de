"""The PromQL of one fleet read: three fleet-wide queries per signal, whatever the number of
GPUs and of usage views (rules with their own window and threshold; ISSUE 14).

- SLOTS: per raw series and per slot, the signal's highest value in that slot, over the
  longest window of the views plus one coarse step. It is a subquery sent as an instant
  query, so its answer is a matrix: one point per slot end, NaN when the slot held only NaN,
  no point when it held no sample. Each view's peak, coverage and exact last busy time are
  read from it in Python (`views.py`), so views with other windows or thresholds cost nothing.
- BUSY: per raw series and per coarse step, the highest value above the lowest threshold of
  the views, over `policy.idleSinceLookback`: the last busy time further back than the slots
  reach, rounded up to a coarse step (a matrix too, nearly empty on an idle fleet).
- NEWEST: the time of each series' newest real sample (staleness), with its host and model.

The server does only what it must per step (ISSUE 18): the matrices are the raw series,
neither scaled nor relabelled nor aggregated, because every operation inside a subquery runs
once per series per step. Measured on 8,000 series over 76 slots (benchmarks/README.md), a
`/ scale` made the slot matrix 2.5 times slower, a `max by` another 2 times, and tagging the
signals with `label_replace` to join them with `or` more still. So each signal has queries of
its own, and Python divides by the signal's `scale`, maps each series to its GPU from its
raw labels (`workload_gpu_key`) and merges per GPU and step with max, a real value over NaN:
the signals, both label styles, and the series a GPU leaves behind when its exporter pod is
replaced. NEWEST, one step only, is grouped in the server by the raw labels Python needs.

Label styles: behind a ServiceMonitor Prometheus keeps the exporter pod's namespace/pod and
renames the workload's to exported_namespace/exported_pod; with honorLabels the workload's
win. `workload_gpu_key` takes exported_* when present, else the plain labels; the host is
Hostname, else hostname.

Templates (`prometheus.queries`), one per query, filled in once per signal. Since ISSUE 18 a
template returns the signal in its own unit (the adapter divides by `scale`), so there is no
{scale} placeholder; a template that still uses one is refused at startup. Placeholders:
{selector} (the metric and its matchers), {metric} and {matchers} (the same matchers, each
followed by a comma, to add your own: `{metric}{{{matchers}cluster="a"}}`), {renamed} and
{kept} (the selector with `exported_pod!=""` / `exported_pod=""`), {threshold} (the lowest
threshold of the views in the signal's unit: ratio x scale), {keys}, and the PromQL
durations {window} (the longest view window), {slot}, {lookback}, {coarse} and {recent}
(window + coarse). A matrix template is the value at one step (the subquery around it is
added here); series must keep the labels that name the GPU.

Range selectors are read left-open, (t - range, t], as Prometheus 3 reads them. A Prometheus
2.x server closes them at the start ([t - range, t]), so a sample exactly on a slot boundary
would count in two slots; `range_semantics.py` asks the server once which it does, and on a
left-closed one each of these placeholders written as a whole range selector (`[{slot}]`,
`[{coarse}]`, ...) becomes that span less one millisecond: timestamps are whole
milliseconds, so [t - range + 1ms, t] is (t - range, t]. The same placeholder elsewhere (an
`offset {slot}`, a subquery's step) is left as it is.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from autoscaler.domain.models import UsageView
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.tree import SignalSettings

# Our own label names: writing into `namespace`/`pod` could make two series of a replaced
# exporter identical (same IP) before they are merged, which Prometheus refuses.
NAMESPACE = "workload_namespace"
POD = "workload_pod"
HOST = "gpu_host"
MIG_LABEL = "GPU_I_ID"
KEY_LABELS = (NAMESPACE, POD, "UUID", MIG_LABEL)
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
    """What a query measures per GPU; the first two answer with a matrix."""

    SLOTS = "slots"  # per slot end over the views' reach: highest value in that slot
    BUSY = "busy"  # per coarse step over the lookback: highest value above the lowest threshold
    NEWEST = "newest"  # time of the newest real sample (staleness)


# max_over_time ignores NaN unless every sample is NaN, and the merge in Python keeps a real
# value over a NaN one, so a NaN point means "only NaN in this slot" (not coverage).
SLOTS = "max_over_time({selector}[{slot}])"

# Only steps above the lowest threshold come back: an idle fleet answers with almost nothing.
BUSY = "max_over_time({selector}[{coarse}]) > {threshold}"

# timestamp() applied directly to a selector returns the sample's own time; `and ... >= 0`
# skips a NaN newest sample. The instant selector sees back as far as the server's
# lookback delta (5m by default), which must not be shorter than policy.staleAfter.
NEWEST = "timestamp({selector}) and ({selector} >= 0)"

# The raw labels each label style is merged by, and the matcher that selects that style
# (the evidence matrices still merge in the server).
RAW_STYLES = (
    (("exported_namespace", "exported_pod", "UUID", MIG_LABEL), 'exported_pod!=""'),
    (("namespace", "pod", "UUID", MIG_LABEL), 'exported_pod=""'),
)
# NEWEST is grouped by every label Python reads (ours too, for a template that maps them).
NEWEST_LABELS = (
    *dict.fromkeys(label for labels, _ in RAW_STYLES for label in labels),
    NAMESPACE,
    POD,
    *HOST_SOURCES[0][1],
    HOST,
    "modelName",
)


@dataclass(frozen=True)
class QueryTemplates:
    """Per-signal templates; the defaults are this module's constants."""

    slots: str = SLOTS
    busy: str = BUSY
    newest: str = NEWEST

    def for_stat(self, stat: Stat) -> str:
        template: str = getattr(self, stat.value)
        return template


@dataclass(frozen=True)
class QueryWindow:
    """The spans one fleet read looks at: the longest window and the lowest threshold of the
    views it serves, so the answer holds what every view needs."""

    window: timedelta
    slot: timedelta
    lookback: timedelta
    threshold: float
    loading: timedelta = timedelta(0)  # the longest maxLoading of the rules
    closed_ranges: bool = False  # the server keeps a sample at a range's start (2.x)

    @classmethod
    def for_views(
        cls,
        views: Collection[UsageView],
        *,
        slot: timedelta,
        lookback: timedelta,
        loading: timedelta = timedelta(0),
        closed_ranges: bool = False,
    ) -> QueryWindow:
        window = max(view.window for view in views)
        threshold = min(view.threshold for view in views)
        return cls(window, slot, lookback, threshold, loading, closed_ranges)

    def range(self, span: timedelta) -> str:
        """`span` as a range selector's duration holding the samples of (t - span, t]."""
        return range_duration(span, closed=self.closed_ranges)

    @property
    def coarse(self) -> timedelta:
        """The step of the last-busy search beyond the slots: reading a day of samples
        costs the same at any step, evaluating a day of one-minute steps does not."""
        return max(self.slot, COARSE_STEP)

    @property
    def recent(self) -> timedelta:
        """How far back the slots reach: the window and one coarse step, so a busy time
        rounded up to a coarse step never lands inside the window."""
        return self.window + self.coarse

    @property
    def evidence_reach(self) -> timedelta:
        """How far back the evidence reads reach: also over the longest maxLoading, so a
        loading episode's start is seen, and its bound holds, whatever the windows."""
        return max(self.window, self.loading) + self.coarse


_SPANS = ("window", "slot", "lookback", "coarse", "recent")
Queries = dict[Stat, tuple[str, ...]]  # per Stat, one query per signal, in the signals' order


def build_queries(
    signals: Sequence[SignalSettings],
    *,
    span: QueryWindow,
    templates: QueryTemplates,
    busy_reach: timedelta | None = None,
) -> Queries:
    """Per `Stat`, one query per signal; BUSY reaches back `busy_reach` (default: the whole
    lookback; less when earlier reads' steps are kept, `busy_history.py`)."""
    busy = (busy_reach or span.lookback, span.coarse)
    reach = {Stat.SLOTS: (span.recent, span.slot), Stat.BUSY: busy}
    built: Queries = {}
    for stat in Stat:
        filled = [fill(templates.for_stat(stat), signal, span=span) for signal in signals]
        if stat in reach:
            over, step = reach[stat]
            built[stat] = tuple(f"({text})[{duration(over)}:{duration(step)}]" for text in filled)
        else:
            built[stat] = tuple(f"max by ({', '.join(NEWEST_LABELS)}) ({text})" for text in filled)
    return built


def fill(
    template: str, signal: SignalSettings, *, span: QueryWindow, matchers: tuple[str, ...] = ()
) -> str:
    """`template` for `signal`; `matchers` narrow its selectors (recording_rules.py: some GPUs).
    A span placeholder that is a whole range selector holds (t - span, t] on any server."""
    spans = {name: getattr(span, name) for name in _SPANS}
    template = with_ranges(template, spans, closed=span.closed_ranges)
    return template.format(
        selector=selector(signal, *matchers),
        metric=signal.metric,
        matchers="".join(f"{matcher}," for matcher in _matchers(signal, *matchers)),
        renamed=selector(signal, *matchers, 'exported_pod!=""'),
        kept=selector(signal, *matchers, 'exported_pod=""'),
        threshold=_number(span.threshold * signal.scale),
        keys=", ".join(KEY_LABELS),
        **{name: duration(getattr(span, name)) for name in _SPANS},
    )


def selector(signal: SignalSettings, *matchers: str) -> str:
    """The metric and `matchers`; a signal that says nothing on MIG instances skips them."""
    every = _matchers(signal, *matchers)
    return f"{signal.metric}{{{','.join(every)}}}" if every else signal.metric


def _matchers(signal: SignalSettings, *matchers: str) -> tuple[str, ...]:
    return matchers if signal.valid_on_mig else (f'{MIG_LABEL}=""', *matchers)


def duration(span: timedelta) -> str:
    """A PromQL duration in whole milliseconds or seconds (`90s`, `1500ms`)."""
    milliseconds = round(span.total_seconds() * 1000)
    if milliseconds <= 0:
        raise ValueError(f"a query span must be positive, got {span}")
    if milliseconds % 1000:
        return f"{milliseconds}ms"
    return f"{milliseconds // 1000}s"


def with_ranges(template: str, spans: Mapping[str, timedelta], *, closed: bool) -> str:
    """`template` with each placeholder of `spans` that is a whole range selector (`[{slot}]`)
    written as its range duration (`range_duration`); the same placeholder elsewhere (an
    `offset {slot}`, a subquery's step) is left for `str.format`."""
    for name, length in spans.items():
        template = template.replace(f"[{{{name}}}]", f"[{range_duration(length, closed=closed)}]")
    return template


def range_duration(span: timedelta, *, closed: bool) -> str:
    """A range selector's duration that holds the samples of (t - span, t]: `span` itself on
    a left-open server (Prometheus 3), one millisecond less on a left-closed one (2.x)."""
    return duration(span - timedelta(milliseconds=1) if closed else span)


def _number(value: float) -> str:
    return repr(float(value))


def gpu_key(labels: Mapping[str, str]) -> GpuKey | None:
    """The GPU a result row speaks of; None when the row lacks the labels that name one."""
    namespace, pod, uuid = labels.get(NAMESPACE), labels.get(POD), labels.get("UUID")
    if not namespace or not pod or not uuid:
        return None
    return GpuKey(namespace, pod, uuid, labels.get(MIG_LABEL) or None)


def workload_gpu_key(labels: Mapping[str, str]) -> GpuKey | None:
    """The GPU a series speaks of, from its raw labels as `relabelled()` would map them in
    the server: each later source label wins when present and non-empty."""
    mapped = dict(labels)
    for target, sources in LABEL_SOURCES:
        for source in sources:
            if labels.get(source):
                mapped[target] = labels[source]
    return gpu_key(mapped)


def host_of(labels: Mapping[str, str]) -> str | None:
    """The GPU's node: our own label when a template wrote it, else its sources as
    `relabelled()` maps them (the later one winning when present)."""
    sources = reversed(HOST_SOURCES[0][1])
    return labels.get(HOST) or next((labels[s] for s in sources if labels.get(s)), None)


Row = tuple[Mapping[str, str], float]
Points = list[tuple[float, float]]  # (unix seconds, value), ascending
# labels, step ends (s), values; lists, or arrays of values (slot_columns.py)
Columns = tuple[Mapping[str, str], Sequence[float], Sequence[float]]


def reach_start(at: datetime, reach: timedelta) -> float:
    """Where a subquery `[reach:step]` evaluated at `at` begins, in unix seconds (whole
    milliseconds divided by 1,000: the very float a step time there parses to).

    Prometheus 2.x closes the range at its start, Prometheus 3 leaves it open (range selectors
    and subqueries alike): a step exactly there is in a 2.x answer only. Every reader of a
    subquery keeps the steps after it (`after_reach_start`), so both answers read alike."""
    return (round(at.timestamp() * 1000) - round(reach.total_seconds() * 1000)) / 1000


def after_reach_start(points: Points, start: float) -> Points:
    """`points` (ascending) without a step at or before `start` (`reach_start`)."""
    return points if not points or points[0][0] > start else [p for p in points if p[0] > start]


def parse_vector(result: Sequence[Mapping[str, Any]]) -> list[Row]:
    """An instant vector's `data.result` as (labels, value); KeyError/TypeError/ValueError
    when it is not one."""
    return [(dict(item["metric"]), float(item["value"][1])) for item in result]


def parse_matrix(result: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, str], Points]]:
    """A matrix's `data.result` as (labels, points); KeyError/TypeError/ValueError when it is
    not one."""
    return [
        (dict(item["metric"]), [(float(at), float(value)) for at, value in item["values"]])
        for item in result
    ]


def parse_columns(result: Sequence[Mapping[str, Any]], *, scale: float = 1.0) -> list[Columns]:
    """A matrix's `data.result` as (labels, step ends, values divided by `scale`), in one pass
    per column: a fleet's slot matrix holds some 600,000 points per 1,000 workloads.
    KeyError/TypeError/ValueError when it is not one."""
    found: list[Columns] = []
    for item in result:
        points = item["values"]
        ends = [at for at, _ in points]
        if ends and not isinstance(ends[-1], int | float):
            raise TypeError(f"a step time must be a number, got {ends[-1]!r}")
        values = [value for _, value in points]
        if values and not isinstance(values[0], float):  # a reply the standard library read
            values = [float(value) for value in values]
        if scale != 1:
            values = [value / scale for value in values]
        found.append((dict(item["metric"]), ends, values))
    return found
