"""The mass-idle circuit breaker: a pure state machine over one observation per cycle.

A healthy fleet changes a little each cycle. When an unusual share of the workloads that
were busy last cycle turns idle or unknown at once, the data is more likely wrong than the
fleet (dcgm-exporter restarting and reporting zeros, profiling counters freezing, series
vanishing), so the breaker opens and the service stops acting. It closes after
`close_after` consecutive normal cycles, or when an admin resets it.

    closed ──trip──▶ open(normal=0) ──normal──▶ open(normal=1) … ──normal × close_after──▶ closed
                        ▲                                   │
                        └────────────── trip ───────────────┘          reset: any ──▶ closed

A cycle without a trustworthy observation (the metric source failed) changes nothing: it is
neither evidence of trouble nor of health.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

EXAMPLES_SHOWN = 3  # workload names quoted in the reason


@dataclass(frozen=True)
class BreakerRules:
    min_workloads: int = 3  # trips only when MORE than this many turn at once
    share: float = 0.2  # ... and more than this share of the workloads busy last cycle
    close_after: int = 3  # consecutive normal cycles that close an open breaker

    def limit(self, busy_before: int) -> float:
        return max(float(self.min_workloads), self.share * busy_before)


@dataclass(frozen=True)
class Turnover:
    """One cycle's observation: how many busy workloads of last cycle turned idle or unknown."""

    busy_before: int
    turned: tuple[str, ...] = ()  # "namespace/name" of each, sorted
    observed: bool = True  # False when the metric source failed this cycle


@dataclass(frozen=True)
class BreakerState:
    open: bool = False
    since: datetime | None = None  # when it opened
    reason: str = ""  # with a few workloads' names: for the log, the Event and admins
    normal_cycles: int = 0  # consecutive normal cycles while open
    summary: str = ""  # the reason without names: for everyone else (every tenant's rows)


CLOSED = BreakerState()


def trips(turnover: Turnover, rules: BreakerRules) -> bool:
    return turnover.observed and len(turnover.turned) > rules.limit(turnover.busy_before)


def step(
    state: BreakerState, turnover: Turnover, *, rules: BreakerRules, now: datetime
) -> BreakerState:
    """The state after one cycle's observation."""
    if not turnover.observed:
        return state
    if trips(turnover, rules):
        if state.open:
            return replace(state, normal_cycles=0)  # still abnormal: start counting again
        return BreakerState(
            open=True,
            since=now,
            reason=describe(turnover, rules),
            summary=summarize(turnover, rules),
        )
    if not state.open:
        return state
    normal = state.normal_cycles + 1
    return CLOSED if normal >= rules.close_after else replace(state, normal_cycles=normal)


def summarize(turnover: Turnover, rules: BreakerRules) -> str:
    """Why it opened, in counts: told to every caller, so it names no workload."""
    return (
        f"{len(turnover.turned)} of {turnover.busy_before} workloads busy last cycle turned "
        f"idle or unknown at once (more than {rules.limit(turnover.busy_before):g})"
    )


def describe(turnover: Turnover, rules: BreakerRules) -> str:
    """The summary and the first few workloads' names, for those who may see every tenant."""
    shown = ", ".join(turnover.turned[:EXAMPLES_SHOWN])
    more = len(turnover.turned) - EXAMPLES_SHOWN
    names = f"{shown} and {more} more" if more > 0 else shown
    return f"{summarize(turnover, rules)}: {names}"
