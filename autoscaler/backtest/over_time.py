"""The time axis: GPUs held, held idle, and reclaimed by the policy, over the replayed range.

Three areas on one time axis fitted to the range: the GPUs held (grey), those held idle at the
policy's threshold (orange), and those the policy's would-be deactivations hand back (blue).
The gap between orange and blue is the idle window's price. Each of the policy's regrets is a
red mark at the time of the stop, its tooltip saying when the GPUs were busy again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape

from autoscaler.backtest.axes import number_label, time_label, time_ticks, value_ticks
from autoscaler.backtest.deactivation import Deactivation
from autoscaler.backtest.occupancy import Occupancy
from autoscaler.backtest.report import Report
from autoscaler.domain.durations import format_duration

WIDTH, HEIGHT = 600, 380
LEFT, RIGHT, TOP, BOTTOM = 60, 20, 40, 80
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
HELD, IDLE, RECLAIMED, REGRET = "#cfcfcf", "#f0a04b", "#1f5f99", "#b03a2e"


class _Frame:
    """Data to picture coordinates for one chart."""

    def __init__(self, start: datetime, end: datetime, ticks: list[float]) -> None:
        self.start, self.end = start.timestamp(), end.timestamp()
        self.ticks, self.top = ticks, ticks[-1]

    def x(self, seconds: float) -> float:
        span = max(1.0, self.end - self.start)
        return LEFT + PLOT_W * (min(max(seconds, self.start), self.end) - self.start) / span

    def y(self, value: float) -> float:
        return TOP + PLOT_H - PLOT_H * value / self.top


def over_time_svg(report: Report) -> str:
    occupancy, policy = report.occupancy, report.policy
    reclaimed = occupancy.reclaimed(policy.deactivations)
    ticks = value_ticks(max(occupancy.held, default=0.0))
    frame = _Frame(report.start, report.end, ticks)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="GPUs over time">',
        _area(frame, occupancy, occupancy.held, colour=HELD, title="GPUs held"),
        _area(frame, occupancy, occupancy.idle, colour=IDLE, title="GPUs held idle"),
        _area(frame, occupancy, reclaimed, colour=RECLAIMED, title="GPUs reclaimed"),
        *_axes(frame, report),
        *_regrets(frame, policy.deactivations),
        *_legend(report, regrets=sum(d.regret for d in policy.deactivations)),
        "</svg>",
    ]
    return "\n".join(parts)


def _area(
    frame: _Frame, occupancy: Occupancy, values: Sequence[float], *, colour: str, title: str
) -> str:
    """A step area: each bucket's average held flat across the bucket."""
    base = frame.y(0)
    points = [f"{frame.x(occupancy.start):.1f},{base:.1f}"]
    for index, value in enumerate(values):
        low = occupancy.start + index * occupancy.bucket
        high = min(low + occupancy.bucket, occupancy.end)
        y = frame.y(value)
        points += [f"{frame.x(low):.1f},{y:.1f}", f"{frame.x(high):.1f},{y:.1f}"]
    points.append(f"{frame.x(occupancy.end):.1f},{base:.1f}")
    peak = number_label(round(max(values, default=0.0), 1))
    return (
        f'<polygon class="series" points="{" ".join(points)}" fill="{colour}" '
        f'fill-opacity="0.85"><title>{title} (at most {peak})</title></polygon>'
    )


def _axes(frame: _Frame, report: Report) -> list[str]:
    bottom, span = TOP + PLOT_H, report.end - report.start
    parts = [
        f'<line x1="{LEFT}" y1="{bottom}" x2="{LEFT + PLOT_W}" y2="{bottom}" stroke="#333"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" stroke="#333"/>',
        f'<text x="16" y="{TOP + PLOT_H / 2}" font-size="13" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + PLOT_H / 2})">GPUs</text>',
        f'<text x="{LEFT + PLOT_W / 2}" y="{bottom + 40}" text-anchor="middle" '
        f'font-size="13">time (UTC)</text>',
    ]
    for value in frame.ticks:
        parts.append(
            f'<text x="{LEFT - 8}" y="{frame.y(value) + 4:.1f}" text-anchor="end" '
            f'font-size="12">{number_label(value)}</text>'
        )
    for tick in time_ticks(report.start, report.end):
        x = frame.x(tick.timestamp())
        parts.append(
            f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 5}" stroke="#333"/>'
            f'<text class="time-tick" x="{x:.1f}" y="{bottom + 18}" text-anchor="middle" '
            f'font-size="12">{time_label(tick, span=span)}</text>'
        )
    return parts


def _regrets(frame: _Frame, deactivations: Sequence[Deactivation]) -> list[str]:
    marks = []
    for item in (d for d in deactivations if d.regret):
        x, y = frame.x(item.at.timestamp()), frame.y(0)
        back = int((item.until - item.at).total_seconds() // 60)
        marks.append(
            f'<path class="regret" d="M{x:.1f},{y - 10:.1f} l-5,-9 h10 z" fill="{REGRET}">'
            f"<title>regret: {escape(str(item.workload))} stopped at {item.at:%H:%M}, its "
            f"GPUs busy again {back} min later</title></path>"
        )
    return marks


def _legend(report: Report, *, regrets: int) -> list[str]:
    policy = report.policy
    entries = (
        (HELD, "GPUs held"),
        (IDLE, f"held idle (at or below {policy.variant.threshold * 100:g}%)"),
        (RECLAIMED, f"reclaimed by the policy ({policy.variant.label})"),
    )
    parts, x = [], LEFT
    for colour, text in entries:
        parts.append(
            f'<rect x="{x}" y="14" width="12" height="12" fill="{colour}"/>'
            f'<text x="{x + 16}" y="24" font-size="12">{escape(text)}</text>'
        )
        x += 28 + 6 * len(text)  # about 6 px a character at 12 px
    horizon = format_duration(report.horizon)
    said = (
        f"red marks: the policy's {regrets} regrets, stops after which the GPUs were busy "
        f"again within {horizon}"
        if regrets
        else f"no regret: after none of the policy's {policy.total.deactivations} stops were "
        f"the GPUs busy again within {horizon}"
    )
    parts.append(
        f'<text x="{LEFT}" y="{HEIGHT - 14}" font-size="12" fill="{REGRET}">{escape(said)}</text>'
    )
    return parts
