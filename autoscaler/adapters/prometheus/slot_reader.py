"""The SLOTS part of a fleet read: from the recorded series when they can be trusted, else
from the raw query (recorded.py says when; docs/RECORDING-RULES.md).

In `auto` a read first asks for the recorded summaries (summary_read.py: one value per
recorded series, exact where recorded_summary.py says so), the raw tail after them, and the
recorded slots only of the GPUs the summaries cannot judge (one query, their UUIDs in one
matcher). When the summaries cannot serve the read (the marker missing, an evaluation missed
or doubled in the reach, a signal not recorded to the newest slot, too many such GPUs) it
sends the recorded query for every GPU (which is also the detection: an absent recording
answers with nothing, cheaply), then per signal one raw query for the slots after the newest
evaluation (the tail, a few slots) and, when some GPUs have holes in their recorded slots,
one raw query for all of them together. The answer is the raw SLOTS answer merged per GPU
(`views.merged_steps`), with the summarised GPUs' raw tail and `Summary` (which stands for
their recorded slots), so every usage view is judged from it exactly as from the raw read.
Each answer is read into compact columns (`slot_columns.py`) and merged before the next
query is sent, so at 10,000 workloads one signal's reply is alive at a time, not two.
Which source a read used is logged when it changes (a warning with the reason when it falls
back) and told to the observer (the engine's `idle_gpu_autoscaler_usage_source` metrics).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Mapping
from datetime import datetime, timedelta

from autoscaler.adapters.prometheus.evidence_base import Ask
from autoscaler.adapters.prometheus.promql import (
    Columns,
    QueryTemplates,
    QueryWindow,
    duration,
    fill,
    workload_gpu_key,
)
from autoscaler.adapters.prometheus.recorded import (
    HOLES,
    RecordedSlots,
    Tail,
    merged_tail,
    recorded_query,
)
from autoscaler.adapters.prometheus.recorded_summary import Summary
from autoscaler.adapters.prometheus.slot_columns import slot_columns
from autoscaler.adapters.prometheus.summary_read import Summarised, read_summaries
from autoscaler.adapters.prometheus.views import (
    Steps,
    merged_steps,
    slots_end,
    span_ms,
    undecided,
    unix_ms,
)
from autoscaler.core.ports import UsageSourceObserver
from autoscaler.domain.gpus import GpuKey
from autoscaler.domain.models import UsageView
from autoscaler.settings.tree import PrometheusSettings, SignalSettings

RECORDED, RAW = "recorded", "raw"
# The most GPUs whose recorded slots one read asks for by UUID (some 45 bytes each in the
# URL; Prometheus and Thanos take request headers up to 1 MiB); above, every GPU's are read.
NARROWED_GPUS = 10_000
SlotAnswer = tuple[dict[GpuKey, Steps], dict[GpuKey, Summary]]  # per GPU: slots, summary


class SlotReader:
    """Reads the SLOTS of a fleet read, merged per GPU; `source` is the last read's."""

    def __init__(
        self,
        *,
        settings: PrometheusSettings,
        templates: QueryTemplates,
        logger: logging.Logger,
        observer: UsageSourceObserver | None = None,
    ) -> None:
        self._signals = settings.signals
        self._recorded = settings.recorded_series
        self._templates = templates
        self._log = logger
        self.observer = observer
        self._state: tuple[str, str | None] = (RAW, None)
        self.source = RAW
        self.summarised = 0  # the last read's GPUs judged from summaries (benchmarks, tests)

    def read(
        self, ask: Ask, *, span: QueryWindow, views: Collection[UsageView], now: datetime
    ) -> SlotAnswer:
        at = slots_end(now, span.slot)
        self.summarised = 0
        if self._recorded.mode == "off":
            self._report(RAW, None, raw_gpus=0)
            return self._raw(ask, span=span, at=at, over=span.recent), {}
        windows = {view.window for view in views}
        summarised = read_summaries(
            ask, signals=self._signals, span=span, windows=windows, at=at, now=now,
            max_age=self._recorded.max_age,
        )  # fmt: skip
        if summarised is not None:
            found = self._from_summaries(ask, summarised, span=span, views=views, now=now)
            if found is not None:
                return found
        recorded = RecordedSlots.of(slot_columns(ask(recorded_query(span), at)), slot=span.slot)
        why = recorded.unusable(self._signals, now=now, max_age=self._recorded.max_age)
        if why is not None:
            self._report(RAW, why, raw_gpus=0)
            return self._raw(ask, span=span, at=at, over=span.recent), {}
        raw_tails = self._tails(ask, tail_from=recorded.tail_from(self._signals), span=span, at=at)
        tails = {signal: merged_tail(columns) for signal, columns in raw_tails.items()}
        return self._from_recorded(ask, recorded, span=span, at=at, tails=tails), {}

    def _from_summaries(
        self,
        ask: Ask,
        summarised: Summarised,
        *,
        span: QueryWindow,
        views: Collection[UsageView],
        now: datetime,
    ) -> SlotAnswer | None:
        """The summaries with the raw tail after them, and the recorded slots of the GPUs
        they cannot judge (holes read raw); None when there are too many such GPUs."""
        at, reach = slots_end(now, span.slot), summarised.reach
        raw_tails = self._tails(ask, tail_from=reach.newest + reach.slot, span=span, at=at)
        tail_steps = merged_steps(column for columns in raw_tails.values() for column in columns)
        summaries = summarised.summaries
        detail = undecided(views, span=span, now=now, tails=tail_steps, summaries=summaries)
        detail |= (summarised.seen | tail_steps.keys()) - summaries.keys()
        if len(detail) > NARROWED_GPUS:
            return None
        kept = {key: summary for key, summary in summaries.items() if key not in detail}
        steps = {key: tail_steps[key] for key in kept if key in tail_steps}
        self.summarised = len(kept)
        if not detail:
            self._report(RECORDED, None, raw_gpus=0)
            return steps, kept
        query = recorded_query(span, matchers=f"{{{_uuids(detail)}}}")
        recorded = RecordedSlots.of(slot_columns(ask(query, at)), slot=span.slot)
        narrowed = recorded.narrowed(detail, newest=reach.newest)
        theirs = {
            signal: merged_tail(_of(columns, detail)) for signal, columns in raw_tails.items()
        }
        found = self._from_recorded(ask, narrowed, span=span, at=at, tails=theirs)
        if self.source == RAW:
            self.summarised = 0
            return found, {}
        return found | steps, kept

    def _tails(
        self, ask: Ask, *, tail_from: int, span: QueryWindow, at: datetime
    ) -> dict[str, list[Columns]]:
        """Per signal, the raw slots from `tail_from` (ms) on."""
        over = timedelta(milliseconds=unix_ms(at) - tail_from) + span.slot
        return {
            signal.metric: [
                _since(column, tail_from)
                for column in self._raw_signal(ask, signal, span=span, at=at, over=over)
            ]
            for signal in self._signals
        }

    def _from_recorded(
        self,
        ask: Ask,
        recorded: RecordedSlots,
        *,
        span: QueryWindow,
        at: datetime,
        tails: Mapping[str, Tail],
    ) -> dict[GpuKey, Steps]:
        """The recorded slots, the raw tail after them, and the GPUs with holes read raw."""
        reach_from = unix_ms(at) - span_ms(span.recent)
        holey = recorded.holey(reach_from=reach_from, tail=[k for t in tails.values() for k in t])
        if len(holey) > self._recorded.max_raw_gpus:
            why = f"{HOLES}: {len(holey)} GPUs have holes, above maxRawGpus"
            self._report(RAW, why, raw_gpus=len(holey))
            return self._raw(ask, span=span, at=at, over=span.recent)
        found = merged_steps(recorded.columns(reach_from=reach_from, leaving=holey, tails=tails))
        del recorded  # its series are in `found` now; the holey GPUs' raw reads need room
        if holey:
            self._raw_gpus(ask, holey, span=span, at=at, into=found)
        holes = f"{HOLES}: {len(holey)} GPUs read raw" if holey else None
        self._report(RECORDED, holes, raw_gpus=len(holey))
        return found

    def _raw_gpus(
        self,
        ask: Ask,
        gpus: Collection[GpuKey],
        *,
        span: QueryWindow,
        at: datetime,
        into: dict[GpuKey, Steps],
    ) -> None:
        """The raw slots of `gpus` only: one query per signal, their UUIDs in one matcher."""
        matchers = (_uuids(gpus),)
        for signal in self._signals:
            found = self._raw_signal(
                ask, signal, span=span, at=at, over=span.recent, matchers=matchers
            )
            merged_steps((column for column in found if _key(column) in gpus), into=into)

    def _raw(
        self, ask: Ask, *, span: QueryWindow, at: datetime, over: timedelta
    ) -> dict[GpuKey, Steps]:
        """The raw SLOTS query per signal over `over` back from `at`, merged per GPU."""
        found: dict[GpuKey, Steps] = {}
        for signal in self._signals:
            merged_steps(self._raw_signal(ask, signal, span=span, at=at, over=over), into=found)
        return found

    def _raw_signal(
        self,
        ask: Ask,
        signal: SignalSettings,
        *,
        span: QueryWindow,
        at: datetime,
        over: timedelta,
        matchers: tuple[str, ...] = (),
    ) -> list[Columns]:
        text = fill(self._templates.slots, signal, span=span, matchers=matchers)
        query = f"({text})[{duration(over)}:{duration(span.slot)}]"
        return slot_columns(ask(query, at), scale=signal.scale)

    def _report(self, source: str, why: str | None, *, raw_gpus: int) -> None:
        """Log a change of source or reason once; tell the observer every read."""
        state = (source, why.split(":")[0] if why else None)
        if state != self._state:
            if why is None:
                self._log.info("usage read from %s series", source)
            else:
                self._log.warning("usage read from %s series: %s", source, why)
        self._state, self.source = state, source
        if self.observer is not None:
            self.observer(source=source, fallback=state[1], raw_gpus=raw_gpus)


def _uuids(gpus: Collection[GpuKey]) -> str:
    """A matcher selecting the series of `gpus`' UUIDs (and of any other GPU sharing one)."""
    uuids = "|".join(sorted({re.escape(gpu.uuid) for gpu in gpus})).replace("\\", "\\\\")
    return f'UUID=~"{uuids}"'


def _of(columns: list[Columns], gpus: Collection[GpuKey]) -> list[Columns]:
    """The columns of `gpus` (their UUIDs looked at first: most columns are not theirs)."""
    uuids = {gpu.uuid for gpu in gpus}
    return [c for c in columns if c[0].get("UUID") in uuids and _key(c) in gpus]


def _key(column: Columns) -> GpuKey | None:
    return workload_gpu_key(column[0])


def _since(column: Columns, first: int) -> Columns:
    """The column's points from slot end `first` (ms) on."""
    labels, ends, values = column
    start = next((i for i, end in enumerate(ends) if round(end * 1000) >= first), len(ends))
    return labels, ends[start:], values[start:]
