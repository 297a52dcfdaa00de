"""The PromQL of one fleet read: three fleet-wide queries, whatever the number of GPUs and
of usage views (rules with their own window and threshold; ISSUE 14).

- SLOTS: per GPU and per slot, the highest ratio any signal reached in that slot, over the
  longest window of the views plus one coarse step. It is a subquery sent as an instant
  query, so its answer is a matrix: one point per slot end, NaN when the slot held only NaN,
  no point when it held no sample. Each view's peak, coverage and exact last busy time are
  read from it in Python (`views.py`), so views with other windows or thresholds cost nothing.
- BUSY: per GPU and per coarse step, the highest ratio above the lowest threshold of the
  views, over `policy.idleSinceLookback`: the last busy time further back than the slots
  reach, rounded up to a coarse step (a matrix too, nearly empty on an idle fleet).
- NEWEST: the time of each GPU's newest real sample (staleness), with its host and model.

Each query is built from a per-signal template, one per entry of `prometheus.signals`; the
signals are tagged with a `signal` label (so `or` keeps them all) and merged per GPU with
`max`. Grouping by the GPU's labels alone also merges the series a GPU leaves behind when
its exporter pod is replaced.

Label styles: behind a ServiceMonitor Prometheus keeps the exporter pod's namespace/pod and
renames the workload's to exported_namespace/exported_pod; with honorLabels the workload's
win. The two matrices merge per slot by the raw labels of each style (`exported_pod!=""`
grouped by exported_namespace/exported_pod, `exported_pod=""` by namespace/pod), because a
`label_replace` inside a subquery runs once per series per step (several times slower); the
answer is mapped to workload_namespace/workload_pod in Python (`workload_gpu_key`). NEWEST,
a plain instant query, maps in the server: `relabelled()` copies exported_* when present,
else the plain label, into our own labels (and Hostname/hostname into gpu_host).

Template placeholders: {selector} (metric and matchers; for the matrices, one label style's),
{metric} and {matchers} (the same matchers, each followed by a comma, to add your own:
`{metric}{{{matchers}cluster="a"}}`), {renamed} and {kept} (the selector with
`exported_pod!=""` / `exported_pod=""`), {scale} (divide to get a 0..1 ratio), {threshold}
(the lowest of the views, as a ratio), {keys}, and the PromQL durations {window} (the
longest view window), {slot}, {lookback}, {coarse} and {recent} (window + coarse). A matrix
template is the per-signal value at one step (the subquery around it is added here);
NEWEST's returns one series per GPU with the key labels.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from autoscaler.domain.gpus import GpuKey
from autoscaler.domain.models import UsageView
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
    """What a query measures per GPU; the first two answer with a matrix."""

    SLOTS = "slots"  # per slot end over the views' reach: highest ratio in that slot
    BUSY = "busy"  # per coarse step over the lookback: highest ratio above the lowest threshold
    NEWEST = "newest"  # time of the newest real sample (staleness)


# max_over_time ignores NaN unless every sample is NaN, and `max` across signals keeps a
# real value over a NaN one, so a NaN point means "only NaN in this slot" (not coverage).
SLOTS = "max_over_time({selector}[{slot}]) / {scale}"

# Only steps above the lowest threshold come back: an idle fleet answers with almost nothing.
BUSY = "max_over_time({selector}[{coarse}]) / {scale} > {threshold}"

# timestamp() applied directly to a selector returns the sample's own time; `and ... >= 0`
# skips a NaN newest sample. The instant selector sees back as far as the server's
# lookback delta (5m by default), which must not be shorter than policy.staleAfter.
NEWEST = relabelled("timestamp({selector}) and ({selector} >= 0)", LABEL_SOURCES + HOST_SOURCES)

# The raw labels each label style is merged by, and the matcher that selects that style.
RAW_STYLES = (
    (("exported_namespace", "exported_pod", "UUID", MIG_LABEL), 'exported_pod!=""'),
    (("namespace", "pod", "UUID", MIG_LABEL), 'exported_pod=""'),
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

    @classmethod
    def for_views(
        cls,
        views: Collection[UsageView],
        *,
        slot: timedelta,
        lookback: timedelta,
        loading: timedelta = timedelta(0),
    ) -> QueryWindow:
        window = max(view.window for view in views)
        return cls(window, slot, lookback, min(view.threshold for view in views), loading)

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


def build_queries(
    signals: Sequence[SignalSettings], *, span: QueryWindow, templates: QueryTemplates
) -> dict[Stat, str]:
    """One query per `Stat`, each covering every signal."""
    reach = {Stat.SLOTS: (span.recent, span.slot), Stat.BUSY: (span.lookback, span.coarse)}
    return {
        stat: _matrix(signals, span, templates.for_stat(stat), *reach[stat])
        if stat in reach
        else _vector(signals, span, templates.for_stat(stat))
        for stat in Stat
    }


def _matrix(
    signals: Sequence[SignalSettings],
    span: QueryWindow,
    template: str,
    reach: timedelta,
    step: timedelta,
) -> str:
    """Signals merged per GPU at every step, each label style by its own raw labels."""
    styles = [
        f"max by ({', '.join(labels)}) ({_tagged(template, signals, span, matcher)})"
        for labels, matcher in RAW_STYLES
    ]
    return f"({' or '.join(styles)})[{duration(reach)}:{duration(step)}]"


def _vector(signals: Sequence[SignalSettings], span: QueryWindow, template: str) -> str:
    return f"max by ({', '.join((*KEY_LABELS, *INFO_LABELS))}) ({_tagged(template, signals, span)})"


def _tagged(
    template: str, signals: Sequence[SignalSettings], span: QueryWindow, *matchers: str
) -> str:
    return " or ".join(
        f"label_replace({_fill(template, signal, span, matchers)}, "
        f'"signal", "{signal.metric}", "", "")'
        for signal in signals
    )


def _fill(
    template: str, signal: SignalSettings, span: QueryWindow, matchers: tuple[str, ...]
) -> str:
    every = _matchers(signal, *matchers)
    return template.format(
        selector=selector(signal, *matchers),
        metric=signal.metric,
        matchers="".join(f"{matcher}," for matcher in every),
        renamed=selector(signal, 'exported_pod!=""'),
        kept=selector(signal, 'exported_pod=""'),
        scale=_number(signal.scale),
        threshold=_number(span.threshold),
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


def _number(value: float) -> str:
    return repr(float(value))


def gpu_key(labels: Mapping[str, str]) -> GpuKey | None:
    """The GPU a result row speaks of; None when the row lacks the labels that name one."""
    namespace, pod, uuid = labels.get(NAMESPACE), labels.get(POD), labels.get("UUID")
    if not namespace or not pod or not uuid:
        return None
    return GpuKey(namespace, pod, uuid, labels.get(MIG_LABEL) or None)


def workload_gpu_key(labels: Mapping[str, str]) -> GpuKey | None:
    """The GPU a matrix series speaks of, its raw labels mapped as `relabelled()` maps them
    in the server: each later source label wins when present and non-empty."""
    mapped = dict(labels)
    for target, sources in LABEL_SOURCES:
        for source in sources:
            if labels.get(source):
                mapped[target] = labels[source]
    return gpu_key(mapped)


Row = tuple[Mapping[str, str], float]
Points = list[tuple[float, float]]  # (unix seconds, value), ascending


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
