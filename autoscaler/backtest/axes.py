"""Axis ranges fitted to the data, and their ticks, for the backtest's SVG charts."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)
_TIME_STEPS = tuple(
    timedelta(minutes=m) for m in (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080)
)


def nice_step(value: float) -> float:
    """A round number (1, 2, 2.5 or 5 times a power of ten) at or above `value`."""
    if not value > 0:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(value))
    return next(f * magnitude for f in _STEPS if value <= f * magnitude * (1 + 1e-9))


def value_ticks(highest: float, *, most: int = 5) -> list[float]:
    """Ticks from 0 at a round step, the last at or just above `highest`: the axis is fitted
    to the data (22 GPUs: 0, 5, ... 25), never to a fixed range."""
    step = nice_step(highest / most)
    if step >= 1:
        step = float(math.ceil(step))  # whole GPUs and GPU-hours read best
    count = max(1, math.ceil(highest / step - 1e-9))
    return [step * n for n in range(count + 1)]


def time_ticks(start: datetime, end: datetime, *, most: int = 8) -> list[datetime]:
    """Round times (whole minutes, hours or days) inside [start, end], at most `most`."""
    span = end - start
    step = next((s for s in _TIME_STEPS if span / s <= most), _TIME_STEPS[-1])
    seconds = int(step.total_seconds())
    first = math.ceil(start.timestamp() / seconds) * seconds
    last = end.timestamp()
    return [datetime.fromtimestamp(t, UTC) for t in range(first, int(last) + 1, seconds)]


def time_label(at: datetime, *, span: timedelta) -> str:
    """Hours and minutes within two days; the date too when the range is longer."""
    if span <= timedelta(days=2):
        return f"{at:%H:%M}"
    return f"{at:%b %d}" if (at.hour, at.minute) == (0, 0) else f"{at:%b %d %H:%M}"


def number_label(value: float) -> str:
    return f"{value:g}" if value >= 1 or value == 0 else f"{value:.2g}"
