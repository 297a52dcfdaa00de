"""The utilization part of a fleet read: SLOTS, BUSY and NEWEST for each signal (`promql`),
parsed once and scaled to ratios, then handed to `views` as the read's shared answers.
SLOTS goes through the source's `SlotReader` (recorded series when they can be trusted, else
raw), BUSY through its `BusyHistory`, which asks only for the steps it lacks."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from autoscaler.adapters.prometheus.busy_history import BusyHistory
from autoscaler.adapters.prometheus.evidence_base import Ask
from autoscaler.adapters.prometheus.promql import (
    Columns,
    QueryTemplates,
    QueryWindow,
    Stat,
    build_queries,
    parse_columns,
    parse_vector,
)
from autoscaler.adapters.prometheus.slot_reader import SlotReader
from autoscaler.adapters.prometheus.views import FleetAnswers, merged_steps, newest_of
from autoscaler.settings.tree import SignalSettings


def read_utilization(
    ask: Ask,
    *,
    signals: Sequence[SignalSettings],
    span: QueryWindow,
    templates: QueryTemplates,
    slots: SlotReader,
    history: BusyHistory,
    now: datetime,
) -> FleetAnswers:
    """Every query, in turn; the first failure ends the read (the exception goes up),
    since the remaining queries could not change the outcome, only delay it."""
    queries = build_queries(signals, span=span, templates=templates)
    slot_steps = slots.read(ask, span=span, now=now)

    def busy_over(reach: timedelta) -> list[list[Columns]]:
        built = build_queries(signals, span=span, templates=templates, busy_reach=reach)
        return [
            parse_columns(ask(query, now), scale=signal.scale)
            for signal, query in zip(signals, built[Stat.BUSY], strict=True)
        ]

    busy = history.read(busy_over, signals=signals, span=span, now=now)
    newest = [row for query in queries[Stat.NEWEST] for row in parse_vector(ask(query, now))]
    return FleetAnswers(slot_steps, merged_steps(busy), newest_of(newest))
