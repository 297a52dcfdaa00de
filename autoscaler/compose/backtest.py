"""`backtest`: the policy replayed over the Prometheus history."""

from __future__ import annotations

import argparse

from autoscaler.adapters.prometheus.range import PrometheusRange
from autoscaler.backtest.command import run_backtest
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings


def backtest(settings: Settings, args: argparse.Namespace) -> int:
    """What this policy would have done on the Prometheus history."""
    source = PrometheusRange(prometheus=settings.prometheus)
    try:
        return run_backtest(args, settings=settings, policy=build_policy(settings), source=source)
    finally:
        source.close()
