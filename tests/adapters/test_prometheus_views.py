"""One fleet read serves every usage view, against the session's real Prometheus.

The history is test_prometheus_adapter.py's (`prometheus_adapter` in
tests/support/prom_histories.py: one dcgm-exporter shape per namespace, pod `worker-0`, and a
hundred idle GPUs), read at its end `at` and half a minute before it (between two slot ends).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from autoscaler.adapters.prometheus.promql import QueryTemplates
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.domain.models import FleetUsage, GpuUsage, UsageView
from autoscaler.settings.tree import PolicySettings, PrometheusSettings
from tests.conftest import PrometheusSession
from tests.support.prom import AuthProxy, make_tls_files
from tests.support.prom_histories import Area
from tests.support.usage_reads import read_one_view

pytestmark = pytest.mark.real

MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
# Three per utilization signal (two by default), one per evidence signal (framebuffer, PCIe,
# NVLink, Ray) and the learned power baseline; this history has no power series, so no power
# matrix (ISSUE 16); and the recorded slots' query, which finds none here and falls back to
# the raw read (docs/RECORDING-RULES.md).
QUERIES_PER_READ = 1 + 3 * 2 + 4 + 1
PROBE = 1  # a source's first read asks once whether ranges are left-open (range_semantics.py)
TOKEN = "views-token"
DEFAULT = UsageView(HOUR, 0.05)
VIEWS = (
    DEFAULT,
    UsageView(15 * MINUTE, 0.05),
    UsageView(150 * MINUTE, 0.05),
    UsageView(HOUR, 0.5),
    UsageView(30 * MINUTE, 0.01),
)
SHAPES = (
    "idle",
    "busy",
    "recently-busy",
    "busy-70m-ago",
    "busy-2h-ago",
    "burst",
    "gap",
    "nan",
    "nan-lately",
    "quiet-4m",
    "stale",
    "split-same-ip",
    "split-new-ip",
    "mig",
    "util-only",
    "honor",
    "two-gpus",
)


@pytest.fixture(scope="module")
def at(prometheus_session: PrometheusSession) -> datetime:
    return datetime.fromtimestamp(prometheus_session.anchor(Area.PROMETHEUS_ADAPTER), UTC)


@pytest.fixture
def url(prometheus_session: PrometheusSession) -> str:
    return prometheus_session.server.url


def read(
    views: tuple[UsageView, ...], *, now: datetime, **prometheus: Any
) -> tuple[dict[UsageView, FleetUsage], int]:
    """Every view's usage from one read, and the number of queries that read sent (a new
    source's first read: the range semantics probe among them)."""
    made = PrometheusMetricSource(
        prometheus=PrometheusSettings(**prometheus), policy=PolicySettings()
    )
    try:
        return made.read_views(views, now=now), made.queries_issued
    finally:
        made.close()


def the_gpu(usage: FleetUsage, namespace: str) -> GpuUsage:
    [gpu] = usage.for_pod(namespace, "worker-0")
    return gpu


def test_one_view_and_five_views_cost_the_same_queries(url: str, at: datetime) -> None:
    one, for_one = read((DEFAULT,), url=url, now=at)
    five, for_five = read(VIEWS, url=url, now=at)
    assert for_one == for_five == PROBE + QUERIES_PER_READ
    assert set(five) == set(VIEWS) and one[DEFAULT] == five[DEFAULT]


@pytest.mark.parametrize(
    "offset",
    [pytest.param(0, id="on-a-slot-end"), pytest.param(-30, id="between-two-slot-ends")],
)
def test_every_view_of_a_shared_read_is_what_a_read_of_that_view_alone_gives(
    url: str, at: datetime, offset: int
) -> None:
    now = at + timedelta(seconds=offset)
    shared, _ = read(VIEWS, url=url, now=now)
    for view in VIEWS:
        alone, _ = read((view,), url=url, now=now)
        assert shared[view] == alone[view], view
        assert {ns for ns, _ in shared[view].gpus} >= set(SHAPES)


def test_a_source_reading_again_keeps_old_busy_steps_and_reads_what_a_fresh_one_reads(
    url: str, at: datetime
) -> None:
    # The second and third reads ask only for the BUSY steps after the settled ones.
    made = PrometheusMetricSource(prometheus=PrometheusSettings(url=url), policy=PolicySettings())
    try:
        for now in (at - 100 * MINUTE, at - 31 * MINUTE, at - timedelta(seconds=30), at):
            again = made.read_views(VIEWS, now=now)
            first, _ = read(VIEWS, url=url, now=now)
            assert again == first, now
    finally:
        made.close()


def test_shorter_windows_and_higher_thresholds_are_judged_on_their_own(
    url: str, at: datetime
) -> None:
    usage, _ = read(VIEWS, url=url, now=at)
    quarter, hour, long, strict = (usage[v] for v in (VIEWS[1], DEFAULT, VIEWS[2], VIEWS[3]))
    assert the_gpu(hour, "recently-busy").peak == pytest.approx(0.9)
    assert the_gpu(quarter, "recently-busy").peak == 0.0  # busy until 20 min ago
    assert the_gpu(quarter, "recently-busy").last_busy_at == at - 20 * MINUTE
    assert the_gpu(long, "busy-2h-ago").peak == pytest.approx(0.9)
    assert the_gpu(long, "busy-2h-ago").last_busy_at == at - 2 * HOUR  # slot-exact this far
    assert the_gpu(hour, "gap").coverage == pytest.approx(42 / 60)
    assert the_gpu(quarter, "gap").coverage == 1.0  # the gap ended 20 min ago
    assert the_gpu(strict, "util-only").last_busy_at is None  # 40 % is below 50 %
    assert the_gpu(hour, "util-only").last_busy_at == at


def test_a_template_adding_its_own_matchers_reads_the_same_usage(url: str, at: datetime) -> None:
    templates = QueryTemplates(slots='max_over_time({metric}{{{matchers}UUID!=""}}[{slot}])')
    made = PrometheusMetricSource(
        prometheus=PrometheusSettings(url=url), policy=PolicySettings(), templates=templates
    )
    try:
        custom = read_one_view(made, window=HOUR, threshold=0.05, now=at)
    finally:
        made.close()
    usage, _ = read((DEFAULT,), url=url, now=at)
    assert custom.failure is None and custom == usage[DEFAULT]


# -- failures and warnings, for every view alike --------------------------------------------


@pytest.fixture(scope="module")
def proxy(
    prometheus_session: PrometheusSession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AuthProxy]:
    tls = make_tls_files(tmp_path_factory.mktemp("prom-views") / "tls")
    with AuthProxy(upstream=prometheus_session.server.url, tls=tls, token=TOKEN) as made:
        yield made


@pytest.fixture
def through_proxy(proxy: AuthProxy, tmp_path: Path) -> dict[str, Any]:
    proxy.reset()
    token = tmp_path / "token"
    token.write_text(TOKEN, encoding="utf-8")
    return {"url": proxy.url, "ca_file": proxy.ca_bundle, "bearer_token_file": token}


def test_a_failed_read_fails_every_view_with_the_same_reason(
    proxy: AuthProxy, through_proxy: dict[str, Any], at: datetime
) -> None:
    proxy.respond_with_error(status=422, error_type="execution", error="query timed out")
    usage, queries = read(VIEWS, now=at, **through_proxy)
    failures = {view: (u.failure, u.gpus) for view, u in usage.items()}
    reason = "HTTP 422 Unprocessable Entity: execution: query timed out"
    assert failures == dict.fromkeys(VIEWS, (reason, {}))
    assert queries == 1  # the first failure ends the read


def test_warnings_make_every_namespace_of_every_view_doubtful_and_keep_the_data(
    proxy: AuthProxy, through_proxy: dict[str, Any], at: datetime
) -> None:
    proxy.inject_warnings("partial response: store 10.0.0.1 unavailable", times=1)
    usage, _ = read(VIEWS, now=at, **through_proxy)
    for view in VIEWS:
        assert usage[view].failure is None
        assert usage[view].doubt_about("idle") == "Prometheus returned partial data (warnings)"
        assert the_gpu(usage[view], "idle").peak == pytest.approx(0.01)


def test_a_view_without_a_window_fails_alone_and_the_others_are_read(
    url: str, at: datetime
) -> None:
    empty = UsageView(timedelta(0), 0.05)
    usage, queries = read((empty, DEFAULT), url=url, now=at)
    assert (usage[empty].failure or "").startswith("cannot build the queries")
    assert usage[DEFAULT].failure is None and usage[DEFAULT].gpus
    assert queries == PROBE + QUERIES_PER_READ
