"""The per-window bars: reclaimable GPU-hours at the policy's threshold for each idle window,
the policy's own darker, each bar's regrets in red above it, and what a regret is, in words."""

from __future__ import annotations

from datetime import timedelta
from html import escape

from autoscaler.backtest.axes import number_label, value_ticks
from autoscaler.backtest.report import VariantReport
from autoscaler.domain.durations import format_duration

WIDTH, HEIGHT = 480, 380
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 80
POLICY_COLOUR, OTHER_COLOUR, REGRET_COLOUR = "#1f5f99", "#8fb8de", "#b03a2e"


def bars_svg(points: tuple[VariantReport, ...], *, horizon: timedelta) -> str:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    ticks = value_ticks(max((p.total.gpu_hours for p in points), default=0.0))
    top = ticks[-1]
    slot_w = plot_w / max(1, len(points))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="GPU-hours by window">',
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" '
        'stroke="#333"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#333"/>',
    ]
    for value in ticks:
        y = TOP + plot_h - plot_h * value / top
        parts.append(
            f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end" font-size="12">'
            f"{number_label(value)}</text>"
        )
    for number, point in enumerate(points):
        parts += _bar(point, x=LEFT + slot_w * number, slot_w=slot_w, plot_h=plot_h, top=top)
    parts += _labels(plot_w, plot_h, horizon=horizon, policy=any(p.is_policy for p in points))
    parts.append("</svg>")
    return "\n".join(parts)


def _labels(plot_w: float, plot_h: float, *, horizon: timedelta, policy: bool) -> list[str]:
    within = escape(format_duration(horizon))
    # Under rules no bar is the policy: each is one window for every RayCluster.
    key = "darker: the policy's window" if policy else "each: one window for every RayCluster"
    return [
        f'<text x="{LEFT + plot_w / 2}" y="{TOP + plot_h + 40}" text-anchor="middle" '
        'font-size="13">idle window</text>',
        f'<text x="16" y="{TOP + plot_h / 2}" font-size="13" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + plot_h / 2})">GPU-hours reclaimable</text>',
        f'<text x="{LEFT}" y="{HEIGHT - 14}" font-size="12" fill="{REGRET_COLOUR}">'
        f"red: regrets (busy again within {within})</text>",
        f'<text x="{LEFT}" y="{20}" font-size="12" fill="#444">{escape(key)}</text>',
    ]


def _bar(point: VariantReport, *, x: float, slot_w: float, plot_h: float, top: float) -> list[str]:
    figures = point.total
    height = plot_h * figures.gpu_hours / top
    bar_x, bar_w = x + slot_w * 0.15, slot_w * 0.7
    y = TOP + plot_h - height
    colour = POLICY_COLOUR if point.is_policy else OTHER_COLOUR
    label = escape(format_duration(point.variant.window))
    return [
        f'<rect x="{bar_x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{height:.1f}" '
        f'fill="{colour}"><title>{label}: {figures.gpu_hours:.1f} GPU-hours, '
        f"{figures.deactivations} deactivations, {figures.regrets} regrets</title></rect>",
        f'<text x="{x + slot_w / 2:.1f}" y="{y - 18:.1f}" text-anchor="middle" '
        f'font-size="12">{figures.gpu_hours:.1f}</text>',
        f'<text x="{x + slot_w / 2:.1f}" y="{y - 4:.1f}" text-anchor="middle" font-size="11" '
        f'fill="{REGRET_COLOUR}">{figures.regrets}</text>',
        f'<text x="{x + slot_w / 2:.1f}" y="{TOP + plot_h + 18:.1f}" text-anchor="middle" '
        f'font-size="12">{label}{" (policy)" if point.is_policy else ""}</text>',
    ]
