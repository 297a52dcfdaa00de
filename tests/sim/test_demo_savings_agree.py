"""The savings figures agree on every surface, on one demo run: the demo's summary (its
printed lines), `report` (the CLI, a child process against the demo's REST API), the REST
report's JSON, and the chart's Grafana dashboard (each Savings panel's PromQL evaluated over
the demo's own /metrics). All are read at the story's end, before the demo stops serving.

GPU-hours reclaimed, stops, requeues, waiters admitted and queue wait shortened (with its
"at least") must be equal everywhere; any difference fails."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from autoscaler.demo.endpoints import Endpoints
from autoscaler.demo.run import DemoOptions, DemoRun
from autoscaler.engine.metrics.savings import PERIOD, SAVINGS_METRIC_NAMES
from tests.support.demo_runs import play_served

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "charts" / "idle-gpu-autoscaler" / "dashboards" / "idle-gpu-autoscaler.json"
SINCE = f"{int(PERIOD.total_seconds() // 3600)}h"  # the period the dashboard's gauges cover
PREFIX = "idle_gpu_autoscaler_savings_"
# The two shapes the Savings panels use: per queue, and added up over the queues.
PER_QUEUE = re.compile(r"max by \(namespace, queue\) \((idle_gpu_autoscaler_savings_[a-z_]+)\)")
TOTAL = re.compile(r"sum\((max by \(namespace, queue\) \(idle_gpu_autoscaler_savings_[a-z_]+\))\)")
Queue = tuple[str, str]


@dataclass
class Surfaces:
    """What each surface showed at the story's end."""

    rest: dict[str, Any] = field(default_factory=dict)
    cli: str = ""
    metrics: dict[str, dict[Queue, float]] = field(default_factory=dict)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def scraped(text: str) -> dict[str, dict[Queue, float]]:
    """The savings gauges from /metrics: metric -> (namespace, queue) -> value."""
    found: dict[str, dict[Queue, float]] = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith(PREFIX):
            found[family.name] = {
                (s.labels["namespace"], s.labels["queue"]): s.value for s in family.samples
            }
    return found


def cli_report(endpoints: Endpoints) -> str:
    env = {**os.environ, "IGA_URL": endpoints.rest_url, "IGA_TOKEN": endpoints.token}
    done = subprocess.run(
        [sys.executable, "-m", "autoscaler", "report", "--since", SINCE],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def played(scenario: str) -> tuple[DemoRun, str, Surfaces]:
    """The demo as `idle-gpu-autoscaler demo` plays it, each surface read before it stops."""
    seen, out = Surfaces(), io.StringIO()

    def read_surfaces(endpoints: Endpoints) -> None:
        auth = {"Authorization": f"Bearer {endpoints.token}"}
        with httpx.Client(base_url=endpoints.rest_url, headers=auth, timeout=30) as http:
            seen.rest = http.get("/api/v1/report", params={"since": SINCE}).json()
            seen.metrics = scraped(http.get("/metrics").text)
        seen.cli = cli_report(endpoints)

    options = DemoOptions(scenario=scenario, speed=None, interactive=False)
    run = play_served(options, out=out, at_the_end=read_surfaces)
    return run, out.getvalue(), seen


@pytest.fixture(scope="module", params=["two-clusters", "many-kinds"])
def story(request: pytest.FixtureRequest) -> tuple[DemoRun, str, Surfaces]:
    return played(request.param)


def shown_by_the_summary(printed: str) -> dict[str, Any]:
    """The figures as the summary's lines print them."""
    summary = printed[printed.index("Summary of ") :]
    reclaimed = re.search(
        r"GPU-hours reclaimed: ([\d.]+)(?: \([^)]*\))? by (\d+) stops?"
        r"(?:; (\d+) requeues? handed ([\d.]+) to the queue)?",
        summary,
    )
    wait = re.search(r"Queue wait shortened: (at least )?(\d+) min, (\d+) waiters? ", summary)
    assert reclaimed is not None and wait is not None, summary
    return {
        "reclaimedGpuHours": float(reclaimed[1]),
        "deactivations": int(reclaimed[2]),
        "requeues": int(reclaimed[3] or 0),
        "requeuedGpuHours": float(reclaimed[4] or 0.0),
        "waitShortenedMinutes": int(wait[2]),
        "waitShortenedAtLeast": wait[1] is not None,
        "waitersAdmitted": int(wait[3]),
    }


def shown_by_the_cli(output: str) -> dict[str, str]:
    """The CLI's TOTAL row, by column header (columns are separated by two spaces or more)."""
    lines = [line for line in output.splitlines() if line.strip()]
    header = next(line for line in lines if line.startswith("NAMESPACE"))
    total = next(line for line in lines if line.startswith("TOTAL"))
    starts = [match.start() for match in re.finditer(r"(?:^|(?<=  ))\S", header)]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    return {header[a:b].strip(): total[a:b].strip() for a, b in bounds}


def test_the_summary_shows_the_report_figures(story: tuple[DemoRun, str, Surfaces]) -> None:
    run, printed, seen = story
    total = seen.rest["total"]
    summary = shown_by_the_summary(printed)

    assert summary["reclaimedGpuHours"] == pytest.approx(total["reclaimedGpuHours"], abs=0.005)
    assert summary["requeuedGpuHours"] == pytest.approx(total["requeuedGpuHours"], abs=0.005)
    assert summary["waitShortenedMinutes"] == int(total["waitShortenedSeconds"] // 60)
    for name in ("deactivations", "requeues", "waitersAdmitted", "waitShortenedAtLeast"):
        assert summary[name] == total[name], name
    assert run.summary.gpu_hours == pytest.approx(total["reclaimedGpuHours"], abs=0.0005)
    by = sum((s.by for s in run.summary.sooner), start=run.summary.figures.wait_shortened * 0)
    assert by.total_seconds() == total["waitShortenedSeconds"]
    assert len(run.summary.sooner) == total["waitersAdmitted"]


def test_the_cli_report_shows_the_rest_figures(story: tuple[DemoRun, str, Surfaces]) -> None:
    _, _, seen = story
    total, row = seen.rest["total"], shown_by_the_cli(seen.cli)
    wait = f"{total['waitShortenedSeconds'] / 60:.0f}m"

    assert row["RECLAIMED GPU-H"] == f"{total['reclaimedGpuHours']:.1f}"
    assert row["STOPS"] == str(total["deactivations"])
    assert row["WAITERS"] == str(total["waitersAdmitted"])
    assert row["WAIT SHORTENED"] == (f"at least {wait}" if total["waitShortenedAtLeast"] else wait)
    assert row.get("REQUEUES", "0") == str(total["requeues"])


def test_every_savings_gauge_carries_the_rest_figures_per_queue(
    story: tuple[DemoRun, str, Surfaces],
) -> None:
    _, _, seen = story
    by_queue = {(row["namespace"], row["queue"]): row for row in seen.rest["byQueue"]}

    assert set(seen.metrics) == set(SAVINGS_METRIC_NAMES)
    for metric, values in seen.metrics.items():
        figure = camel(metric.removeprefix(PREFIX))
        assert set(values) == set(by_queue), metric
        for queue, value in values.items():
            assert value == pytest.approx(float(by_queue[queue][figure]), abs=0.0005), metric


def test_each_savings_panel_of_the_dashboard_shows_the_rest_figures(
    story: tuple[DemoRun, str, Surfaces],
) -> None:
    _, _, seen = story
    by_queue = {(row["namespace"], row["queue"]): row for row in seen.rest["byQueue"]}
    checked = 0
    for expr in savings_expressions():
        total = TOTAL.fullmatch(expr)
        per_queue = PER_QUEUE.fullmatch(total[1] if total else expr)
        assert per_queue is not None, f"a Savings panel's query this test cannot evaluate: {expr}"
        metric = per_queue[1]
        assert metric in seen.metrics, f"{expr} names {metric}, which /metrics does not carry"
        shown, figure = seen.metrics[metric], camel(metric.removeprefix(PREFIX))
        if total:
            expected = float(seen.rest["total"][figure])
            assert sum(shown.values()) == pytest.approx(expected, abs=0.001), expr
        else:
            assert shown == pytest.approx(
                {queue: float(row[figure]) for queue, row in by_queue.items()}, abs=0.0005
            ), expr
        checked += 1
    assert checked >= 10  # every figure of the Savings row and the reclaimed stat


def savings_expressions() -> list[str]:
    """The queries of the panels that show a savings gauge."""
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [
        target["expr"]
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        if PREFIX in target["expr"]
    ]


def test_the_story_has_a_stop_and_a_waiter_to_compare(
    story: tuple[DemoRun, str, Surfaces],
) -> None:
    """Equal zeros would prove nothing."""
    _, _, seen = story
    total = seen.rest["total"]

    assert total["deactivations"] >= 1 and total["reclaimedGpuHours"] > 0
    assert total["waitersAdmitted"] >= 1 and total["waitShortenedSeconds"] > 0
