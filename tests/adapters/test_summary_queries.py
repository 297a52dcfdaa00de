"""The summaries' PromQL against the session's real Prometheus (ISSUE 18): the summary read
judges every GPU of the adapter's corpus as the per-slot read does, for views whose
thresholds are the corpus' own levels (a value exactly at a threshold is not above it), and
what the server answers is what summaries.py says it is.

The corpus is test_prometheus_adapter.py's (`prometheus_adapter` in
tests/support/prom_histories.py): both label styles, a replaced exporter's split series,
NaN, holes, MIG, one signal only; read at its end and between two slot ends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from autoscaler.adapters.prometheus.promql import SLOTS, QueryTemplates
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.adapters.prometheus.summaries import read_summaries
from autoscaler.domain.models import FleetUsage, UsageView
from autoscaler.settings.tree import PolicySettings, PrometheusSettings
from tests.conftest import PrometheusSession
from tests.support.prom_histories import Area

pytestmark = pytest.mark.real

MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
# The corpus' levels (percent over 100, ratios alike) as thresholds, and a window that is not
# a whole number of slots.
VIEWS = (
    UsageView(HOUR, 0.05),
    UsageView(HOUR, 0.01),
    UsageView(HOUR, 0.02),
    UsageView(HOUR, 0.1),
    UsageView(150 * MINUTE, 0.6),
    UsageView(15 * MINUTE, 0.85),
    UsageView(90 * MINUTE + 30 * timedelta(seconds=1), 0.4),
)
# Means the same as the built-in SLOTS, but a configured template keeps the per-slot read.
PER_SLOT = QueryTemplates(slots=f"({SLOTS})")


@pytest.fixture(scope="module")
def at(prometheus_session: PrometheusSession) -> datetime:
    return datetime.fromtimestamp(prometheus_session.anchor(Area.PROMETHEUS_ADAPTER), UTC)


def read(url: str, *, now: datetime, templates: QueryTemplates) -> dict[UsageView, FleetUsage]:
    source = PrometheusMetricSource(
        prometheus=PrometheusSettings(url=url),
        policy=PolicySettings(),
        templates=templates,
        readers=[],
    )
    try:
        return source.read_views(VIEWS, now=now)
    finally:
        source.close()


@pytest.mark.parametrize("before_end", [timedelta(0), timedelta(seconds=30)], ids=["end", "mid"])
def test_the_summary_read_judges_every_gpu_as_the_per_slot_read(
    prometheus_session: PrometheusSession, at: datetime, before_end: timedelta
) -> None:
    url, now = prometheus_session.server.url, at - before_end
    summaries = read(url, now=now, templates=QueryTemplates())
    every_slot = read(url, now=now, templates=PER_SLOT)
    for view in VIEWS:
        assert summaries[view].failure is None and summaries[view].gpus
        assert summaries[view].gpus == every_slot[view].gpus, view


def test_the_server_answers_latest_busy_slot_ends_and_leaves_nan_and_holes_to_the_slots(
    prometheus_session: PrometheusSession, at: datetime
) -> None:
    url = prometheus_session.server.url

    def ask(query: str, when: datetime) -> Sequence[Mapping[str, Any]]:
        params = {"query": query, "time": f"{when.timestamp():.3f}"}
        reply = requests.get(f"{url}/api/v1/query", params=params, timeout=30)
        reply.raise_for_status()
        result: Sequence[Mapping[str, Any]] = reply.json()["data"]["result"]
        return result

    found = read_summaries(
        ask,
        signals=PrometheusSettings(url=url).signals,
        views=VIEWS[:1],
        slot=MINUTE,
        coarse=15 * MINUTE,
        at=at,
    )
    times = [one.last_busy for one in found.views[VIEWS[0]].values() if one.last_busy]
    # timestamp() of a computed vector inside the subquery is the step time: a slot end.
    assert times and all(time % 60 == 0 for time in times)
    assert max(times) == at.timestamp()  # busy GPUs are busy in the newest slot
    namespaces = {key.namespace for key in found.detail}
    # NaN slots; holes in every series (a gap, an exporter replaced within the window)
    assert {"nan", "nan-lately", "gap", "split-new-ip", "split-same-ip"} <= namespaces
    assert not {"idle", "busy", "honor", "util-only"} & namespaces  # covered: exact
