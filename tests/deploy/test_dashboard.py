"""The Grafana dashboard queries only metrics the service exports
(autoscaler.engine.metrics.telemetry's
METRIC_NAMES), in valid PromQL, and never adds up what every replica reports alike."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.engine.metrics.telemetry import METRIC_NAMES
from tests.deploy.tooling import CHART, require_tool, run

DASHBOARD = CHART / "dashboards" / "idle-gpu-autoscaler.json"
EXPORTED_METRICS = frozenset(METRIC_NAMES)
HISTOGRAM_SERIES = re.compile(r"_(bucket|sum|count)$")
# Gauges of the whole fleet: every replica (two by default) reports the same value.
FLEET_GAUGES = re.compile(
    r"idle_gpu_autoscaler_(workloads|exemptions_active|breaker_open|deactivations_deferred"
    r"|deactivations_last_hour|deactivations_hourly_limit|contested_workloads|savings_[a-z_]+)\b"
)
# A fleet gauge taken once over the replicas (max per label set), then added up over the queues.
SUMMED_ONCE_PER_QUEUE = re.compile(
    r"sum\(max by \(namespace, queue\) \(idle_gpu_autoscaler_savings_[a-z_]+\)\)"
)
# Grafana's range variables, replaced by a plain duration for promtool.
GRAFANA_RANGES = re.compile(r"\$__(rate_interval|range|interval)")


def panels(node: Any) -> list[dict[str, Any]]:
    found = []
    for panel in node.get("panels", []):
        found.append(panel)
        found.extend(panels(panel))
    return found


def expressions() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [target["expr"] for panel in panels(dashboard) for target in panel.get("targets", [])]


def queried_metrics(expr: str) -> set[str]:
    names = set(re.findall(r"\b(idle_gpu_autoscaler_[a-z_]+)\b", expr))
    return {HISTOGRAM_SERIES.sub("", name) for name in names}


def test_every_queried_metric_is_exported_by_the_service() -> None:
    queried = set().union(*(queried_metrics(expr) for expr in expressions()))
    assert queried, "the dashboard queries nothing"
    assert queried <= EXPORTED_METRICS


def test_the_dashboard_shows_what_an_admin_asks_first() -> None:
    joined = "\n".join(expressions())
    for shown in (
        "max by (state) (idle_gpu_autoscaler_workloads)",
        "idle_gpu_autoscaler_gpu_hours_reclaimed_total",
        "sum by (namespace) (increase(idle_gpu_autoscaler_deactivations_total",
        "idle_gpu_autoscaler_last_successful_cycle_timestamp_seconds",
        "idle_gpu_autoscaler_cycle_duration_seconds_bucket",
    ):
        assert shown in joined


def test_the_dashboard_shows_what_the_guards_hold_back() -> None:
    joined = "\n".join(expressions())
    for shown in (
        "max(idle_gpu_autoscaler_breaker_open)",
        "max by (reason) (idle_gpu_autoscaler_deactivations_deferred)",
        "max(idle_gpu_autoscaler_deactivations_last_hour)",
        "max(idle_gpu_autoscaler_deactivations_hourly_limit)",
        "max(idle_gpu_autoscaler_contested_workloads)",
    ):
        assert shown in joined


def test_the_dashboard_shows_the_savings_per_namespace_and_queue() -> None:
    joined = "\n".join(expressions())
    for name in (
        "reclaimed_gpu_hours",
        "held_idle_gpu_hours",
        "held_not_running_gpu_hours",
        "wait_shortened_seconds",
        "wait_shortened_at_least",
        "waiters_admitted",
        "deactivations",
        "requeues",
        "requeued_gpu_hours",
        "regretted",
        "contested",
    ):
        assert f"max by (namespace, queue) (idle_gpu_autoscaler_savings_{name})" in joined


def test_fleet_gauges_are_never_summed_over_replicas() -> None:
    summed = [
        expr
        for expr in expressions()
        if FLEET_GAUGES.search(expr) and "sum" in expr and not SUMMED_ONCE_PER_QUEUE.fullmatch(expr)
    ]
    assert summed == []


@pytest.mark.real
def test_every_expression_is_valid_promql(tmp_path: Path) -> None:
    promtool = require_tool("promtool", "apt-get install prometheus")
    rules = [
        {"record": f"dashboard:expr_{index}", "expr": GRAFANA_RANGES.sub("5m", expr)}
        for index, expr in enumerate(expressions())
    ]
    path = tmp_path / "dashboard-rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    done = run(promtool, "check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
