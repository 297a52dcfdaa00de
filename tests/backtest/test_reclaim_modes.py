"""The backtest's reclaim modes side by side: `always` against `when-contended`, where a stop
counts only at a step someone waited in the workload's ClusterQueue or cohort."""

from __future__ import annotations

import argparse
import io
import json
from datetime import datetime, timedelta

import pytest

from autoscaler.backtest.arguments import add_backtest_arguments
from autoscaler.backtest.command import Span, run_backtest
from autoscaler.backtest.queues import NO_QUEUE_DATA, QueueHistory, queue_map
from autoscaler.compose.backtest import backtest, demo_history
from autoscaler.demo.scenarios import SCENARIOS
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings

SETTINGS = Settings()
T = 1_000_000_020


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_backtest_arguments(parser)
    return parser.parse_args(list(argv))


HISTORY = QueueHistory(
    waited={"cq-training": frozenset({T}), "cq-solo": frozenset({T})},
    cohorts={"cq-training": "lab", "cq-notebooks": "lab", "cq-other": "elsewhere"},
    queue_of={"notebooks": "cq-notebooks", "other": "cq-other", "solo-ns": "cq-solo"},
)


@pytest.mark.parametrize(
    ("namespace", "at", "contended"),
    [
        pytest.param("solo-ns", T, True, id="someone-waited-in-its-own-queue"),
        pytest.param("notebooks", T, True, id="someone-waited-in-a-queue-of-its-cohort"),
        pytest.param("other", T, False, id="a-waiter-in-another-cohort-does-not-count"),
        pytest.param("notebooks", T + 60, False, id="nobody-waited-at-that-step"),
        pytest.param("unmapped", T, False, id="a-namespace-of-unknown-queue-is-never-contended"),
    ],
)
def test_a_step_is_contended_when_someone_waited_in_the_queue_or_its_cohort(
    namespace: str, at: int, contended: bool
) -> None:
    assert HISTORY.contended(namespace, at) is contended


def test_a_queue_map_entry_without_both_names_is_refused_naming_it() -> None:
    assert queue_map(["ns=cq"]) == {"ns": "cq"}
    with pytest.raises(ValueError, match="'ns': expected NAMESPACE=CLUSTERQUEUE"):
        queue_map(["ns"])


def test_the_demo_backtest_compares_the_modes_in_a_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert backtest(SETTINGS, parse("--demo")) == 0
    lines = capsys.readouterr().out.splitlines()

    first = next(i for i, line in enumerate(lines) if line.startswith("Reclaim modes at 1h @ 5%"))
    assert "someone waited in the queue or cohort" in lines[first]
    assert lines[first + 1].split("  ")[0] == "RECLAIM"
    # always: 8 stops, one while someone waited (two-clusters' second RayCluster); under
    # when-contended the noisy notebook and the kai story's KAI notebook (nobody ever waits
    # there) are not stopped, and the cohorts' idle clusters wait until their waiter arrives
    # (rd at 20:00, the lab at 13:30)
    assert lines[first + 2].split() == ["always", "8", "142.3", "1", "-"]
    assert lines[first + 3].split() == ["when-contended", "6", "100.8", "6", "2"]


def test_the_demo_backtest_reports_the_modes_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert backtest(SETTINGS, parse("--demo", "--output", "json")) == 0
    modes = json.loads(capsys.readouterr().out)["reclaimModes"]

    assert [(m["mode"], m["deactivations"], m["stopsAvoided"]) for m in modes] == [
        ("always", 8, None),
        ("when-contended", 6, 2),
    ]
    assert modes[1]["stopsWhileSomeoneWaited"] == 6


def test_without_a_namespace_to_queue_map_the_modes_are_not_compared() -> None:
    history = demo_history(SETTINGS)
    out = io.StringIO()

    code = run_backtest(
        parse(),
        settings=SETTINGS,
        policy=build_policy(SETTINGS),
        source=history,
        out=out,
        recorded=Span(history.start, history.end),
    )

    assert code == 0
    assert NO_QUEUE_DATA in out.getvalue().splitlines()


def test_without_kueue_metrics_in_the_history_the_modes_are_not_compared() -> None:
    class GpuSeriesOnly:
        """The recorded GPU series, and no Kueue metric at all."""

        def query_range(self, promql: str, **kwargs: object) -> object:
            if "kueue_" in promql:
                return type(history.query_range(promql, **kwargs))(series=())  # type: ignore[arg-type]
            return history.query_range(promql, **kwargs)  # type: ignore[arg-type]

        def closed_ranges(self, *, at: datetime) -> bool:
            return history.closed_ranges(at=at)

    history = demo_history(SETTINGS)
    out = io.StringIO()
    start = SCENARIOS["when-contended"].start - timedelta(hours=1)

    code = run_backtest(
        parse("--queue-of", "lab-notebooks=cq-notebooks", "--start", f"{start:%Y-%m-%dT%H:%M:%SZ}"),
        settings=SETTINGS,
        policy=build_policy(SETTINGS),
        source=GpuSeriesOnly(),  # type: ignore[arg-type]
        out=out,
        recorded=Span(history.start, history.end),
    )

    assert code == 0
    assert "no queue data: when-contended not compared" in out.getvalue()


def test_each_workload_keeps_its_rules_reclaim_mode_between_always_and_when_contended(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lab = {"namespaces": ["lab-notebooks", "lab-training"]}
    settings = Settings.model_validate(
        {"rules": [{"name": "lab", "match": lab, "reclaim": "when-contended"}]}
    )

    assert backtest(settings, parse("--demo", "--output", "json")) == 0
    report = json.loads(capsys.readouterr().out)

    modes = {m["mode"]: m for m in report["reclaimModes"]}
    assert [
        (m["mode"], m["deactivations"], m["stopsWhileSomeoneWaited"]) for m in modes.values()
    ] == [("always", 8, 1), ("per rule", 8, 4), ("when-contended", 6, 6)]
    # the lab's three idle clusters wait for their waiters (less GPU-time reclaimed); the
    # noisy notebook and the KAI notebook, under the default rule, are stopped as `always`
    # stops them
    policy = report["variants"][0]
    assert policy["byRule"] and policy["total"]["gpuHours"] == modes["per rule"]["gpuHours"]
    assert modes["always"]["gpuHours"] > modes["per rule"]["gpuHours"]
    rules = {
        r["rule"]: (r["reclaim"], r["rayClusters"], r["deactivations"]) for r in report["rules"]
    }
    # every RayCluster outside the lab's namespaces, noisy's six and kai's two holding GPUs
    # included, is the default's
    assert rules == {"lab": ("when-contended", 4, 3), "default": ("always", 12, 5)}
    assert {d["rayCluster"] for d in policy["deactivations"] if d["rule"] == "default"} >= {
        "idle-notebook-gpu-group"
    }
