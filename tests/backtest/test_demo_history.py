"""`backtest --demo`: the policy replayed over a generated history of the demo's stories, with
no Prometheus, through the same range-query port the Prometheus adapter fills."""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from autoscaler.backtest.arguments import add_backtest_arguments
from autoscaler.backtest.matrix import Series
from autoscaler.compose.backtest import backtest, demo_history
from autoscaler.demo.scenarios import SCENARIOS
from autoscaler.settings.tree import Settings

SETTINGS = Settings()
NOISY_START = SCENARIOS["noisy"].start


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_backtest_arguments(parser)
    return parser.parse_args(list(argv))


def replayed(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert backtest(SETTINGS, parse("--demo", "--output", "json", *argv)) == 0
    found: dict[str, Any] = json.loads(capsys.readouterr().out)
    return found


def minutes(at: str) -> str:
    return at[11:16]


def test_the_policy_deactivates_what_the_live_demo_does_at_the_same_minutes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = replayed(capsys)
    policy = report["variants"][0]
    found = {(d["rayCluster"], minutes(d["at"])) for d in policy["deactivations"]}

    assert policy["policy"] and (policy["window"], policy["thresholdPercent"]) == ("1h", 5.0)
    # tests/sim/test_demo.py: the live demo stops these at these minutes (KubeRay heads hold
    # no GPU in two stories, so the history names those clusters by worker group)
    assert found == {
        ("idle-notebook-gpu-group", "10:05"),
        ("first-raycluster", "11:20"),
        ("bob-workspace-small-group", "19:10"),
        ("carol-workspace-small-group", "19:20"),
        # when-contended's idle clusters, all of them: this policy reclaims `always`
        ("eval-server-gpu-group", "13:00"),
        ("bob-notebook-gpu-group", "13:05"),
        ("carol-notebook-gpu-group", "13:10"),
        ("kai-notebook-gpu-group", "15:10"),  # the kai story's, suspended live at 15:10
    }
    assert (report["start"], report["end"]) == ("2026-03-02T09:00:00Z", "2026-03-02T20:15:00Z")
    # two-clusters' first RayCluster (the second never ran), rd's three workspaces (production
    # never ran either: nothing was freed for it), noisy's five 2-GPU clusters and its
    # half-used 4-GPU one, when-contended's four (its fine-tuning job never ran), kai's trainer
    # and its KAI notebook (the notebook sharing a GPU by fraction holds no whole GPU)
    assert report["gpus"] == 2 + 3 * 4 + (5 * 2 + 4) + 4 * 4 + (4 + 2)


def test_short_windows_stop_the_bursty_and_slow_loading_clusters_and_regret_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = replayed(capsys, "--alternative", "15m", "--alternative", "30m")
    by_window = {v["window"]: v for v in report["variants"]}
    regretted = {
        window: {d["rayCluster"] for d in by_window[window]["deactivations"] if d["regret"]}
        for window in ("15m", "30m")
    }

    # weight-loader's 45 idle minutes before it loads and trains: loading or not, a short
    # window stops it before its weights even start to arrive
    assert regretted == {
        "15m": {"bursty-eval-gpu-group", "slow-loader-gpu-group", "weight-loader-gpu-group"},
        "30m": {"slow-loader-gpu-group", "weight-loader-gpu-group"},
    }


def test_the_default_hour_regrets_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    report = replayed(capsys, "--alternative", "15m")
    by_window = {v["window"]: v for v in report["variants"]}

    assert by_window["1h"]["total"]["regrets"] == 0


def test_a_range_given_on_the_command_line_narrows_the_recorded_day(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = replayed(capsys, "--start", "2026-03-02T12:00:00Z", "--end", "2026-03-02T20:00:00Z")
    policy = report["variants"][0]

    assert (report["start"], report["end"]) == ("2026-03-02T12:00:00Z", "2026-03-02T20:00:00Z")
    assert {d["rayCluster"] for d in policy["deactivations"]} == {
        "idle-notebook-gpu-group",  # already idle for the window when the range begins
        "first-raycluster",
        "bob-workspace-small-group",
        "carol-workspace-small-group",
        "eval-server-gpu-group",
        "bob-notebook-gpu-group",
        "carol-notebook-gpu-group",
        "kai-notebook-gpu-group",
    }


def test_the_history_answers_each_metric_in_its_unit_with_service_monitor_labels() -> None:
    history = demo_history(SETTINGS)
    at = NOISY_START + timedelta(minutes=30)  # slow-loader reads its weights at 2%

    def answer(metric: str) -> dict[str, Series]:
        promql = f'max_over_time({metric}{{GPU_I_ID=""}}[60s])'
        reply = history.query_range(promql, start=at, end=at, step=timedelta(minutes=1))
        return {s.labels["exported_pod"]: s for s in reply.series}

    ratios, percents = answer("DCGM_FI_PROF_GR_ENGINE_ACTIVE"), answer("DCGM_FI_DEV_GPU_UTIL")
    loader = next(pod for pod in percents if pod.startswith("slow-loader-gpu-group-worker-"))
    labels = percents[loader].labels

    assert percents[loader].values == [(int(at.timestamp()), pytest.approx(2.0))]
    assert ratios[loader].values == [(int(at.timestamp()), pytest.approx(0.02))]
    assert labels["exported_namespace"] == "research"
    assert labels["namespace"] == "gpu-operator"  # the exporter's own, as scraped
    assert labels["UUID"].startswith("GPU-")


@pytest.mark.parametrize(
    "promql",
    [
        pytest.param("avg_over_time(DCGM_FI_DEV_GPU_UTIL[60s])", id="another-function"),
        pytest.param("max_over_time(DCGM_FI_DEV_GPU_UTIL[5m])", id="another-slot"),
    ],
)
def test_a_query_the_history_cannot_answer_is_refused_not_guessed(promql: str) -> None:
    history = demo_history(SETTINGS)
    at = datetime.fromisoformat("2026-03-02T10:00:00+00:00")

    with pytest.raises(ValueError, match="recorded history"):
        history.query_range(promql, start=at, end=at, step=timedelta(minutes=1))
