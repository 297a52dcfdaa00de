"""A self-contained HTML page charting reclaimable GPU-hours against the idle window.

One inline SVG, no scripts, no outside resources: it opens anywhere and can be attached to
a ticket. Bars are GPU-hours at the policy's threshold for each window; the number above a
bar counts its regrets; the policy's own window is drawn darker.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from autoscaler.backtest.report import Report, VariantReport
from autoscaler.settings.tree import format_duration

WIDTH, HEIGHT = 720, 360
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 60
POLICY_COLOUR, OTHER_COLOUR, REGRET_COLOUR = "#1f5f99", "#8fb8de", "#b03a2e"


def write_chart(report: Report, path: Path) -> None:
    path.write_text(html_page(report), encoding="utf-8")


def html_page(report: Report) -> str:
    threshold = report.chart[0].variant.threshold if report.chart else 0.0
    title = (
        f"Reclaimable GPU-hours by idle window (threshold {threshold * 100:g}%), "
        f"{report.start:%Y-%m-%d} to {report.end:%Y-%m-%d}"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n"
        "<style>body{font-family:sans-serif;margin:2em}p{color:#444}</style>\n"
        "</head>\n<body>\n"
        f"<h1>{escape(title)}</h1>\n"
        f"{svg(report.chart)}\n"
        f"<p>{report.gpus} GPUs in {report.workloads} RayClusters. A regret is a would-be "
        f"deactivation after which the GPUs were busy again within "
        f"{escape(format_duration(report.horizon))}; the red number above a bar counts them.</p>\n"
        "</body>\n</html>\n"
    )


def svg(points: tuple[VariantReport, ...]) -> str:
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    top = _nice_top(max((p.total.gpu_hours for p in points), default=0.0))
    slot_w = plot_w / max(1, len(points))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="GPU-hours by window">',
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" '
        'stroke="#333"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#333"/>',
    ]
    for tick in range(5):
        value = top * tick / 4
        y = TOP + plot_h - plot_h * tick / 4
        parts.append(
            f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end" font-size="12">'
            f"{value:g}</text>"
        )
    for number, point in enumerate(points):
        parts += _bar(point, x=LEFT + slot_w * number, slot_w=slot_w, plot_h=plot_h, top=top)
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 15}" text-anchor="middle" '
        'font-size="13">idle window</text>'
    )
    parts.append(
        f'<text x="16" y="{TOP + plot_h / 2}" font-size="13" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + plot_h / 2})">GPU-hours reclaimable</text>'
    )
    parts.append("</svg>")
    return "\n".join(parts)


def _bar(point: VariantReport, *, x: float, slot_w: float, plot_h: float, top: float) -> list[str]:
    figures = point.total
    height = plot_h * figures.gpu_hours / top if top else 0.0
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


def _nice_top(value: float) -> float:
    """A round axis maximum at or above `value`."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** (len(str(int(value))) - 1)
    for factor in (1, 2, 2.5, 5, 10):
        if value <= factor * magnitude:
            return float(factor * magnitude)
    return float(10 * magnitude)
