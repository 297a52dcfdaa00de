"""One replayed policy: a window and threshold (the policy's or an alternative) and the
reclaim mode; or, `by_rule`, each workload under its own rule (`backtest/rulebook.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from autoscaler.domain.durations import format_duration

ALWAYS, WHEN_CONTENDED = "always", "when-contended"
PER_RULE = "per rule"  # a by-rule variant whose rules keep their own reclaim modes


@dataclass(frozen=True)
class Variant:
    window: timedelta  # by_rule: the default rule's
    threshold: float  # ratio; by_rule: the default rule's
    reclaim: str = ALWAYS  # when-contended: only at steps someone waited (backtest/queues.py)
    by_rule: bool = False  # each workload judged under its matched rule, not this window

    @property
    def label(self) -> str:
        mode = "" if self.reclaim in (ALWAYS, PER_RULE) else f" {self.reclaim}"
        if self.by_rule:
            return f"per rule{mode}"
        span = format_duration(self.window, units="hm", split="never")
        return f"{span} @ {self.threshold * 100:g}%{mode}"
