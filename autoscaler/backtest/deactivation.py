"""One would-be deactivation found by the replay, and how long it would have held its GPUs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from autoscaler.backtest.identity import WorkloadKey
from autoscaler.domain.policy.rules import DEFAULT_RULE


@dataclass(frozen=True)
class Deactivation:
    workload: WorkloadKey
    gpus: int
    at: datetime
    until: datetime
    came_back: bool  # its GPUs were busy again before the range ended
    regret: bool  # ... within the regret horizon
    rule: str = DEFAULT_RULE  # the rule that judged it (a uniform variant: the default)

    @property
    def gpu_hours(self) -> float:
        return self.gpus * (self.until - self.at).total_seconds() / 3600


@dataclass(frozen=True)
class Opened:
    """A would-be deactivation not yet closed: when, how many GPUs, under which rule."""

    at: int  # unix seconds
    gpus: int
    rule: str


def closed(
    opened: Opened, key: WorkloadKey, *, until: int, horizon: timedelta, back: bool = False
) -> Deactivation:
    until = max(until, opened.at)
    regret = back and until - opened.at <= horizon.total_seconds()
    return Deactivation(
        key, opened.gpus, utc(opened.at), utc(until), back, regret, rule=opened.rule
    )


def utc(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
