"""One usage view read through the `MetricSource` port, for tests that ask about one window."""

from __future__ import annotations

from datetime import datetime, timedelta

from autoscaler.core.ports import MetricSource
from autoscaler.domain.models import FleetUsage, UsageView


def read_one_view(
    source: MetricSource, *, window: timedelta, threshold: float, now: datetime
) -> FleetUsage:
    """The fleet's usage over `window` at `threshold`: the cycle's one read, for one view."""
    view = UsageView(window, threshold)
    return source.read_views([view], now=now)[view]
