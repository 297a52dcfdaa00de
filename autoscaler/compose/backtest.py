"""`backtest`: the policy replayed over the Prometheus history, or with `--demo` over a
generated history of the demo's stories (no Prometheus needed)."""

from __future__ import annotations

import argparse

from autoscaler.adapters.prometheus.range import PrometheusRange
from autoscaler.backtest.command import Span, run_backtest
from autoscaler.backtest.source import RangeQueries
from autoscaler.demo.scenarios import RECORDED_DAY, Scenario
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings
from autoscaler.sim.history import RecordedArrival, RecordedHistory, RecordedStory


def backtest(settings: Settings, args: argparse.Namespace) -> int:
    """What this policy would have done on the Prometheus history (or the demo's)."""
    policy = build_policy(settings)
    if args.demo:
        history = demo_history(settings)
        recorded = Span(history.start, history.end, queue_of=demo_queue_of())
        return run_backtest(
            args, settings=settings, policy=policy, source=history, recorded=recorded
        )
    source = PrometheusRange(prometheus=settings.prometheus)
    try:
        return run_backtest(args, settings=settings, policy=policy, source=source)
    finally:
        source.close()


def demo_history(settings: Settings) -> RecordedHistory:
    """Every demo story of the recorded day side by side, as dcgm-exporter would have recorded it
    with nothing deactivated, until the last story ends."""
    stories = [recorded_story(scenario) for scenario in RECORDED_DAY.values()]
    history = RecordedHistory(
        stories,
        signals=settings.prometheus.signals,
        slot=settings.policy.slot,
        end=max(scenario.end for scenario in RECORDED_DAY.values()),
        evidence=settings.prometheus.evidence,
    )
    _: RangeQueries = history  # the backtest's port, checked by mypy
    return history


def demo_queue_of() -> dict[str, str]:
    """Each demo namespace's ClusterQueue, from the stories' LocalQueues (one each)."""
    return {
        namespace: lq.cluster_queue
        for scenario in RECORDED_DAY.values()
        for (namespace, _), lq in scenario.kueue.local_queues.items()
    }


def recorded_story(scenario: Scenario) -> RecordedStory:
    return RecordedStory(
        name=scenario.name,
        start=scenario.start,
        kueue=scenario.kueue,
        gpus=scenario.gpus,
        arrivals=tuple(RecordedArrival(a.minute, a.spec, a.profile) for a in scenario.arrivals),
    )
