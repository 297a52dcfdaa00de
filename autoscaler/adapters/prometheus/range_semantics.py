"""Whether the server closes a range at its start, asked once: the one fact that makes the
same PromQL mean different samples on Prometheus 2.x and 3.

Prometheus 3 made range selectors, subqueries and the lookback delta left-open, (t - r, t];
2.x kept them left-closed, [t - r, t] ("Range selectors and lookback exclude samples
coinciding with the left boundary", docs/migration.md of prometheus/prometheus, the 3.0
migration guide). Every slot of this service is read left-open: on a left-closed server each
range selector of our queries is written one millisecond shorter (`promql.range_duration`).

The probe, `count_over_time(vector(1)[2s:1s])` evaluated at a whole second t, counts the
subquery's steps at whole seconds in its range: t - 2, t - 1 and t on a left-closed server
(3), t - 1 and t on a left-open one (2). Measured on the gate's Prometheus 2.42: 3 at a whole
second, 2 half a second later (a step then cannot sit on the start, hence the whole second).
Any other answer (another engine, a proxy that rewrites queries) is no answer: the caller
treats it as an unreadable server, never guesses. There `prometheus.rangeSemantics`, set to
left-open or left-closed, says it instead, and no probe is sent (`configured`). Each source
that reads ranges (the live one, the backtest's) holds its answer in one `ProbedOnce`.

A recording rule is evaluated by Prometheus itself, where no probe of ours reaches, so it
carries the probe inside (`SELF_PROBE`): pinned by the `@` modifier to a whole second (unix
1000 s), whatever the evaluation time, it is 3 or 2 there too, and the rule keeps the slot
expression written for that server (`recording_rules.either_server`).
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from autoscaler.adapters.prometheus.http import ExchangeError
from autoscaler.adapters.prometheus.promql import parse_vector

PROBE = "count_over_time(vector(1)[2s:1s])"
SELF_PROBE = "count_over_time(vector(1)[2s:1s] @ 1000)"
LEFT_CLOSED_COUNT, LEFT_OPEN_COUNT = 3, 2
# The setting that overrides the probe, for a server whose answer tells nothing.
SETTING, AUTO = "prometheus.rangeSemantics", "auto"
# An instant query evaluated at a time, returning its `data.result`.
Ask = Callable[[str, datetime], Sequence[Mapping[str, Any]]]


class RangeSemantics(enum.Enum):
    LEFT_CLOSED = "left-closed"  # Prometheus 2.x: a sample at a range's start is kept
    LEFT_OPEN = "left-open"  # Prometheus 3: it is left out

    @property
    def closed(self) -> bool:
        return self is RangeSemantics.LEFT_CLOSED


_CANNOT_TELL = "cannot tell whether Prometheus keeps a sample at a range's start"
_BY_COUNT = {
    float(LEFT_CLOSED_COUNT): RangeSemantics.LEFT_CLOSED,
    float(LEFT_OPEN_COUNT): RangeSemantics.LEFT_OPEN,
}


class UnknownRangeSemantics(ExchangeError):
    """The probe's answer was neither a left-closed nor a left-open server's."""


def probe_time(now: datetime) -> datetime:
    """A whole second at or before `now`, where the probe's first step can sit on its start."""
    return datetime.fromtimestamp(math.floor(now.timestamp()), UTC)


def semantics_of(result: Sequence[Mapping[str, Any]]) -> RangeSemantics:
    """What the probe's `data.result` says of the server; UnknownRangeSemantics otherwise."""
    try:
        rows = parse_vector(result)
    except (KeyError, TypeError, ValueError) as exc:
        raise UnknownRangeSemantics(f"{_CANNOT_TELL}: {PROBE} answered {exc!r}") from exc
    counts = [value for _, value in rows]
    found = _BY_COUNT.get(counts[0]) if len(counts) == 1 else None
    if found is None:
        raise UnknownRangeSemantics(
            f"{_CANNOT_TELL}: {PROBE} answered {counts}, neither [3.0] (Prometheus 2.x) nor"
            " [2.0] (Prometheus 3); check that prometheus.url is a Prometheus or Thanos Querier,"
            f" or set {SETTING} to left-open (Prometheus 3) or left-closed (2.x)"
        )
    return found


def asked(ask: Ask, *, now: datetime) -> RangeSemantics:
    """What the server says when `ask` (an instant query returning `data.result`) sends it the
    probe at a whole second at or before `now`; raises what `ask` or `semantics_of` raises."""
    return semantics_of(ask(PROBE, probe_time(now)))


def configured(setting: str) -> RangeSemantics | None:
    """The semantics `prometheus.rangeSemantics` fixes, or None for `auto` (ask the probe)."""
    return None if setting == AUTO else RangeSemantics(setting)


class ProbedOnce:
    """One source's range semantics: what `prometheus.rangeSemantics` fixes, else the probe's
    answer, asked at the first call and remembered. A failed probe raises what `ask` or
    `semantics_of` raised and is asked again at the next call; with a `logger`, its first
    failure is logged (worded by `worded`) and so is the answer."""

    def __init__(
        self,
        setting: str,
        *,
        ask: Ask,
        logger: logging.Logger | None = None,
        worded: Callable[[Exception], object] = str,
    ) -> None:
        self._semantics = configured(setting)
        self._ask = ask
        self._log = logger
        self._worded = worded
        self._failed_before = False

    def semantics(self, *, now: datetime) -> RangeSemantics:
        if self._semantics is None:
            try:
                self._semantics = asked(self._ask, now=now)
            except Exception as exc:
                if self._log is not None and not self._failed_before:
                    self._log.warning("range semantics probe failed: %s", self._worded(exc))
                self._failed_before = True
                raise
            if self._log is not None:
                self._log.info("Prometheus ranges are %s", self._semantics.value)
        return self._semantics
