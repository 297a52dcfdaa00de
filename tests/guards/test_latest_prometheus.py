"""The fresh check's one query against the session's real Prometheus, over the adapter's
backfilled cases (tests/support/prom_histories.py, `prometheus_adapter`), read at their end."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.domain.usage.fresh import LatestUsage
from autoscaler.settings.tree import PolicySettings, PrometheusSettings
from tests.conftest import PrometheusSession
from tests.support.prom_histories import Area

pytestmark = pytest.mark.real

POD = "worker-0"
CASES = (
    "idle",
    "busy",
    "nan",
    "quiet-4m",
    "stale",
    "split-new-ip",
    "mig",
    "mig-util-only",
    "util-only",
    "honor",
    "two-gpus",
)


@pytest.fixture(scope="module")
def at(prometheus_session: PrometheusSession) -> datetime:
    return datetime.fromtimestamp(prometheus_session.anchor(Area.PROMETHEUS_ADAPTER), UTC)


def new_source(prometheus_session: PrometheusSession) -> PrometheusMetricSource:
    return PrometheusMetricSource(
        prometheus=PrometheusSettings(url=prometheus_session.server.url), policy=PolicySettings()
    )


@pytest.fixture(scope="module")
def source(prometheus_session: PrometheusSession) -> Iterator[PrometheusMetricSource]:
    made = new_source(prometheus_session)
    yield made
    made.close()


@pytest.fixture(scope="module")
def latest(prometheus_session: PrometheusSession, at: datetime) -> Iterator[LatestUsage]:
    # Its own source, not the module's: the query counts below hold whichever test runs first.
    source = new_source(prometheus_session)
    try:
        yield read_twice(source, at)
    finally:
        source.close()


def read_twice(source: PrometheusMetricSource, at: datetime) -> LatestUsage:
    assert source.queries_issued == 0  # a new source: its first exchange asks the probe
    answer = source.read_latest([(namespace, POD) for namespace in CASES], now=at)
    assert source.queries_issued == 1 + 1, "the probe, then one query for every candidate"
    before = source.queries_issued
    assert source.read_latest([(namespace, POD) for namespace in CASES], now=at) == answer
    assert source.queries_issued == before + 1, "one query for every candidate"
    return answer


def values(latest: LatestUsage, namespace: str) -> list[float | None]:
    return [sample.value for sample in latest.for_pod(namespace, POD)]


@pytest.mark.parametrize(
    ("namespace", "expected"),
    [
        pytest.param("idle", [0.01], id="an-idle-gpu"),
        pytest.param("busy", [0.85], id="a-busy-gpu"),
        pytest.param("util-only", [0.4], id="a-percent-metric-is-scaled"),
        pytest.param("honor", [0.02], id="honor-labels-style"),
        pytest.param("split-new-ip", [0.02], id="a-replaced-exporter-is-one-gpu"),
        pytest.param("mig", [0.7], id="a-mig-instance"),
        pytest.param("two-gpus", [0.0, 0.6], id="each-gpu-of-a-pod"),
        pytest.param("nan", [None], id="a-nan-newest-sample-has-no-value"),
        pytest.param("stale", [], id="no-sample-within-the-lookback-delta"),
        pytest.param("mig-util-only", [], id="a-metric-that-says-nothing-on-mig"),
    ],
)
def test_the_newest_value_of_each_gpu(
    latest: LatestUsage, namespace: str, expected: list[float | None]
) -> None:
    assert latest.failure is None
    found = values(latest, namespace)
    assert sorted(found, key=lambda v: -1 if v is None else v) == [
        pytest.approx(v) if v is not None else None for v in expected
    ]


def test_the_newest_sample_time_comes_with_it(latest: LatestUsage, at: datetime) -> None:
    [idle] = latest.for_pod("idle", POD)
    assert idle.at == at
    [quiet] = latest.for_pod("quiet-4m", POD)
    assert quiet.at is not None and at - quiet.at >= timedelta(minutes=4)


def test_only_the_pods_asked_about_are_answered(
    source: PrometheusMetricSource, at: datetime
) -> None:
    answer = source.read_latest([("idle", POD), ("busy", "no-such-pod")], now=at)
    assert set(answer.samples) == {("idle", POD)}


def test_no_candidates_sends_no_query(source: PrometheusMetricSource, at: datetime) -> None:
    before = source.queries_issued
    assert source.read_latest([], now=at) == LatestUsage(at)
    assert source.queries_issued == before


def test_an_unreachable_prometheus_is_a_failure_never_an_exception() -> None:
    down = PrometheusMetricSource(
        prometheus=PrometheusSettings(url="http://127.0.0.1:9", retries=0),
        policy=PolicySettings(),
    )
    try:
        answer = down.read_latest([("idle", POD)], now=datetime.now(UTC))
    finally:
        down.close()
    assert answer.failure is not None and "cannot connect" in answer.failure
    assert answer.samples == {}
