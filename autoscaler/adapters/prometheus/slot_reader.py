"""The SLOTS part of a fleet read: from the recorded series when they can be trusted, else
from the raw query (recording_rules.py says when; docs/RECORDING-RULES.md).

In `auto` a read sends the recorded query (which is also the detection: an absent recording
answers with nothing, cheaply), then per signal one raw query for the slots after the newest
evaluation (the tail, a few slots) and, when some GPUs have holes in their recorded slots,
one raw query for all of them together. The answer is the raw SLOTS answer merged per GPU
(`views.merged_steps`), so every usage view is judged from it exactly as from the raw read.
Each answer is read into compact columns (`slot_columns.py`) and merged before the next
query is sent, so at 10,000 workloads one signal's reply is alive at a time, not two.
Which source a read used is logged when it changes (a warning with the reason when it falls
back) and told to the observer (the engine's `idle_gpu_autoscaler_usage_source` metrics).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterator
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
from autoscaler.adapters.prometheus.recording_rules import (
    HOLES,
    RecordedSlots,
    merged_tail,
    recorded_query,
)
from autoscaler.adapters.prometheus.slot_columns import slot_columns
from autoscaler.adapters.prometheus.views import Steps, merged_steps, slots_end, span_ms, unix_ms
from autoscaler.core.ports import UsageSourceObserver
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.tree import PrometheusSettings, SignalSettings

RECORDED, RAW = "recorded", "raw"


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

    def read(self, ask: Ask, *, span: QueryWindow, now: datetime) -> dict[GpuKey, Steps]:
        at = slots_end(now, span.slot)
        if self._recorded.mode == "off":
            self._report(RAW, None, raw_gpus=0)
            return self._raw(ask, span=span, at=at, over=span.recent)
        recorded = RecordedSlots.of(slot_columns(ask(recorded_query(span), at)), slot=span.slot)
        why = recorded.unusable(self._signals, now=now, max_age=self._recorded.max_age)
        if why is not None:
            self._report(RAW, why, raw_gpus=0)
            return self._raw(ask, span=span, at=at, over=span.recent)
        return self._from_recorded(ask, recorded, span=span, at=at)

    def _from_recorded(
        self, ask: Ask, recorded: RecordedSlots, *, span: QueryWindow, at: datetime
    ) -> dict[GpuKey, Steps]:
        """The recorded slots, the raw tail after them, and the GPUs with holes read raw."""
        reach_from = unix_ms(at) - span_ms(span.recent)
        tail_from = recorded.tail_from(self._signals)
        over = timedelta(milliseconds=unix_ms(at) - tail_from) + span.slot
        tails = {
            signal.metric: merged_tail(
                _since(column, tail_from)
                for column in self._raw_signal(ask, signal, span=span, at=at, over=over)
            )
            for signal in self._signals
        }
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
        uuids = "|".join(sorted({re.escape(gpu.uuid) for gpu in gpus})).replace("\\", "\\\\")
        matchers = (f'UUID=~"{uuids}"',)
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
    ) -> Iterator[Columns]:
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


def _key(column: Columns) -> GpuKey | None:
    return workload_gpu_key(column[0])


def _since(column: Columns, first: int) -> Columns:
    """The column's points from slot end `first` (ms) on."""
    labels, ends, values = column
    start = next((i for i, end in enumerate(ends) if round(end * 1000) >= first), len(ends))
    return labels, ends[start:], values[start:]
