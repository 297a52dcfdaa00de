"""One replayed policy: a window and threshold (the policy's or an alternative) and the
reclaim mode."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

ALWAYS, WHEN_CONTENDED = "always", "when-contended"


@dataclass(frozen=True)
class Variant:
    window: timedelta
    threshold: float  # ratio
    reclaim: str = ALWAYS  # when-contended: only at steps someone waited (backtest/queues.py)

    @property
    def label(self) -> str:
        minutes = int(self.window.total_seconds() // 60)
        span = f"{minutes // 60}h" if minutes % 60 == 0 else f"{minutes}m"
        mode = "" if self.reclaim == ALWAYS else f" {self.reclaim}"
        return f"{span} @ {self.threshold * 100:g}%{mode}"
