"""The backtest judges each workload under the rule it matches, from what the history shows:
that rule's window, threshold, grace and action; a rule the history cannot evaluate leaves the
workload unjudged ("rule unknown"), never judged by a later rule."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.backtest.command import BacktestOptions, backtest
from autoscaler.backtest.identity import WorkloadKey
from autoscaler.backtest.report import Report, table
from autoscaler.backtest.rule_report import OBSERVE_NOTE
from autoscaler.backtest.rulebook import match_from_history
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings

from .fakes import FakeRange, SlotValue

H, M = 3600, 60
T0 = int(datetime(2026, 3, 2, tzinfo=UTC).timestamp())
END = T0 + 6 * H
H100 = "NVIDIA H100 80GB HBM3"


def busy_until(at: int, *, then: float = 0.0) -> SlotValue:
    return lambda t: 0.8 if t <= at else then


# Three RayClusters, each busy for the first hour and idle for the five after it.
FLEET = {
    ("short", "rc-head-aaaaa", "GPU-1"): busy_until(T0 + H),
    ("long", "rc-head-bbbbb", "GPU-2"): busy_until(T0 + H),
    ("other", "rc-head-ccccc", "GPU-3"): busy_until(T0 + H),
}


def settings(*rules: dict[str, Any]) -> Settings:
    return Settings.model_validate({"policy": {"idleSinceLookback": "8h"}, "rules": list(rules)})


def run(
    config: Settings, *, fleet: dict[tuple[str, str, str], SlotValue] = FLEET, **options: Any
) -> Report:
    base = BacktestOptions(
        start=datetime.fromtimestamp(T0, UTC),
        end=datetime.fromtimestamp(END, UTC),
        step=timedelta(minutes=1),
        alternatives=(),
        chart_windows=(),
        horizon=timedelta(hours=2),
        **options,
    )
    source = FakeRange(fleet, models={"GPU-1": H100})
    return backtest(source, options=base, settings=config, policy=build_policy(config))


def stops(report: Report) -> dict[str, tuple[str, int]]:
    """Each stopped namespace: (the rule that stopped it, minutes after T0)."""
    return {
        d.workload.namespace: (d.rule, int(d.at.timestamp() - T0) // M)
        for d in report.policy.deactivations
    }


def per_rule(report: Report) -> dict[str, tuple[int, int]]:
    assert report.rules is not None
    return {r.rule: (r.workloads, r.deactivations) for r in report.rules.rules}


SHORT = {"name": "short", "match": {"namespaces": ["short"]}, "idleWindow": "30m"}
LONG = {"name": "long", "match": {"namespaces": ["long"]}, "idleWindow": "6h"}


def test_the_default_rule_alone_stops_every_idle_cluster_after_its_hour() -> None:
    report = run(settings())

    assert stops(report) == {ns: ("default", 120) for ns in ("short", "long", "other")}
    assert not report.policy.variant.by_rule


def test_two_rules_with_their_own_windows_stop_sooner_and_never_than_the_default() -> None:
    report = run(settings(SHORT, LONG))

    # idle from 60 min: 30 minutes later under `short`, never within the range under `long`
    assert stops(report) == {"short": ("short", 90), "other": ("default", 120)}
    assert per_rule(report) == {"short": (1, 1), "long": (1, 0), "default": (1, 1)}
    assert report.policy.variant.label == "per rule"


def test_a_rule_with_its_own_threshold_keeps_a_gpu_that_is_idle_only_by_the_default() -> None:
    strict = {"name": "strict", "match": {"namespaces": ["other"]}, "thresholdPercent": 1}
    fleet = {key: busy_until(T0 + H, then=0.02) for key in FLEET}  # 2 % once the hour is over

    report = run(settings(strict), fleet=fleet)

    assert set(stops(report)) == {"short", "long"}
    assert per_rule(report) == {"strict": (1, 0), "default": (2, 2)}


def test_an_observe_rule_counts_no_deactivation_and_says_so() -> None:
    watch = {"name": "watch", "match": {"namespaces": ["short"]}, "action": "observe"}

    report = run(settings(watch))

    assert set(stops(report)) == {"long", "other"}
    assert per_rule(report)["watch"] == (1, 0)
    lines = table(report)
    assert any(line.split()[:2] == ["watch", "observe"] and "0 (observe)" in line for line in lines)
    assert OBSERVE_NOTE in lines


def test_a_rule_the_history_cannot_evaluate_leaves_its_workloads_unjudged_not_fallen_through() -> (
    None
):
    by_priority = {"name": "vip", "match": {"namespaces": ["short"], "priorityClasses": ["high"]}}

    report = run(settings(by_priority))

    # `short` is neither stopped by `vip` nor by the default; the others miss `vip` outright
    assert set(stops(report)) == {"long", "other"}
    assert report.rules is not None
    assert report.rules.unknown == (
        ("short/rc", "rule vip selects on priorityClasses, which the history does not show"),
    )
    lines = table(report)
    assert any(line.split()[:3] == ["(rule", "unknown)", "-"] for line in lines)
    assert any(line.startswith("rule unknown, not judged: short/rc: rule vip") for line in lines)


RULES = build_policy(
    settings(
        {"name": "h100", "match": {"gpuModels": [H100]}},
        {"name": "queued", "match": {"clusterQueues": ["cq-a"]}},
        {"name": "labelled", "match": {"namespaces": ["lab"], "namespaceLabels": {"t": "x"}}},
    )
).rules


@pytest.mark.parametrize(
    ("namespace", "models", "queue_of", "rule", "unknown"),
    [
        pytest.param("ns", {H100}, {}, "h100", None, id="the-model-label-in-the-series-matches"),
        pytest.param("ns", set(), {}, "h100", "no GPU model", id="no-model-label-is-unknown"),
        pytest.param("ns", {"A100"}, {"ns": "cq-a"}, "queued", None, id="a-queue-given-matches"),
        pytest.param("ns", {"A100"}, {}, "queued", "--queue-of", id="no-queue-given-is-unknown"),
        pytest.param(
            "lab",
            {"A100"},
            {"lab": "cq-b"},
            "labelled",
            "namespaceLabels",
            id="namespace-labels-are-never-in-history",
        ),
        pytest.param(
            "ns",
            {"A100"},
            {"ns": "cq-b"},
            "default",
            None,
            id="another-queue-and-namespace-miss-outright-despite-the-labels",
        ),
    ],
)
def test_a_rule_is_matched_from_what_the_history_shows(
    namespace: str, models: set[str], queue_of: dict[str, str], rule: str, unknown: str | None
) -> None:
    found = match_from_history(
        WorkloadKey(namespace, "rc"), models=models, rules=RULES, queue_of=queue_of
    )

    assert found.rule.name == rule
    if unknown is None:
        assert found.known
    else:
        assert found.unknown is not None and unknown in found.unknown
