"""`backtest`: the policy replayed over the Prometheus history, or with `--demo` over a
generated history of the demo's stories (no Prometheus needed)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

import requests

from autoscaler.adapters.prometheus.range import PrometheusRange, RangeReply
from autoscaler.backtest.command import Span, run_backtest
from autoscaler.backtest.source import RangeQueries
from autoscaler.client.next_steps import prometheus_unreachable
from autoscaler.core.errors import MetricsUnavailable
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
    if args.prometheus_url:
        prometheus = settings.prometheus.model_copy(update={"url": args.prometheus_url})
        settings = settings.model_copy(update={"prometheus": prometheus})
    source = PrometheusRange(prometheus=settings.prometheus)
    worded = UnreachableWorded(source, url=settings.prometheus.url)
    try:
        return run_backtest(args, settings=settings, policy=policy, source=worded)
    finally:
        source.close()


class UnreachableWorded:
    """The range queries, with a connection failure told in one line that names where to
    point the backtest (`--prometheus-url`, `IGA_PROMETHEUS_URL`) instead of urllib3's
    400 characters. Other failures (a refused query, a bad reply) keep their own words."""

    def __init__(self, source: PrometheusRange, *, url: str) -> None:
        self._source = source
        self._url = url

    def query_range(
        self, promql: str, *, start: datetime, end: datetime, step: timedelta
    ) -> RangeReply:
        with self._unreachable_worded():
            return self._source.query_range(promql, start=start, end=end, step=step)

    def closed_ranges(self, *, at: datetime) -> bool:
        with self._unreachable_worded():
            return self._source.closed_ranges(at=at)

    @contextmanager
    def _unreachable_worded(self) -> Iterator[None]:
        try:
            yield
        except MetricsUnavailable as exc:
            cause = exc.__cause__
            if isinstance(cause, requests.ConnectionError) and not isinstance(
                cause, requests.exceptions.SSLError | requests.Timeout
            ):
                raise MetricsUnavailable(prometheus_unreachable(self._url, cause)) from exc
            raise


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
