"""A self-contained HTML page: what the policy would have done over time, and reclaimable
GPU-hours against the idle window, with the regrets explained.

Two inline SVGs, no scripts, no outside resources: it opens anywhere and can be attached to a
ticket. The time axis (`over_time`) shows GPUs held, held idle and reclaimed by the policy;
the bars (`bars`) compare idle windows at the policy's threshold. A list under them names a
few regrets of each window, so a red number can be traced to the clusters behind it.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from autoscaler.backtest.bars import bars_svg
from autoscaler.backtest.deactivation import Deactivation
from autoscaler.backtest.over_time import over_time_svg
from autoscaler.backtest.report import Report, VariantReport
from autoscaler.domain.durations import format_duration

EXAMPLES = 3  # regrets named per window
_STYLE = (
    "body{font-family:sans-serif;margin:1.5em;color:#222}p,li{color:#444;max-width:70em}"
    ".charts{display:flex;flex-wrap:wrap;gap:1.5em}figure{margin:0}"
    "figcaption{font-weight:bold;margin-bottom:.5em}"
)


def write_chart(report: Report, path: Path) -> None:
    path.write_text(html_page(report), encoding="utf-8")


def html_page(report: Report) -> str:
    title = f"What the policy would have done, {_range(report)}"
    threshold = report.policy.variant.threshold * 100
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">\n<head>\n<meta charset="utf-8">',
            f"<title>{escape(title)}</title>",
            f"<style>{_STYLE}</style>",
            "</head>\n<body>",
            f"<h1>{escape(title)}</h1>",
            f"<p>{report.gpus} GPUs in {report.workloads} RayClusters, a decision every "
            f"{escape(format_duration(report.step))}.</p>",
            '<div class="charts">',
            "<figure><figcaption>GPUs over time</figcaption>",
            over_time_svg(report),
            "</figure>",
            f"<figure><figcaption>Reclaimable GPU-hours by idle window (threshold "
            f"{threshold:g}%)</figcaption>",
            bars_svg(report.chart, horizon=report.horizon),
            "</figure>",
            "</div>",
            *_regrets_explained(report),
            "</body>\n</html>\n",
        ]
    )


def _regrets_explained(report: Report) -> list[str]:
    horizon = escape(format_duration(report.horizon))
    lines = [
        f"<p>A <strong>regret</strong> is a would-be deactivation after which the cluster's "
        f"GPUs were busy again within {horizon}: its user came back to a stopped cluster and "
        "waited for it to be admitted again. Short windows reclaim more GPU-hours and regret "
        "more; the red numbers above the bars count them.</p>"
    ]
    regretted = [v for v in report.chart if v.total.regrets]
    if regretted:
        lines.append("<ul>" + "".join(_window_regrets(v) for v in regretted) + "</ul>")
    return lines


def _window_regrets(report: VariantReport) -> str:
    found = [d for d in report.deactivations if d.regret]
    named = "; ".join(_regret(d) for d in found[:EXAMPLES])
    more = f"; and {len(found) - EXAMPLES} more" if len(found) > EXAMPLES else ""
    window = escape(format_duration(report.variant.window))
    count = f"{len(found)} regret{'s' if len(found) > 1 else ''}"
    return f"<li>{window}: {count}, {named}{more}</li>"


def _regret(item: Deactivation) -> str:
    back = int((item.until - item.at).total_seconds() // 60)
    return f"{escape(str(item.workload))} stopped at {item.at:%H:%M}, busy again {back} min later"


def _range(report: Report) -> str:
    start, end = report.start, report.end
    if start.date() == end.date():
        return f"{start:%Y-%m-%d %H:%M} to {end:%H:%M} UTC"
    return f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"
