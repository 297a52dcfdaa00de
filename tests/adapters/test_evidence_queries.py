"""How many queries a fleet read sends once evidence is read (ISSUE 16), against the session's
real Prometheus: three for utilization, one per enabled evidence signal (Ray's included), one
more for the learned power baseline, and the power matrix only once some model has a
baseline. The same for one GPU or a hundred, for one view or three.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.domain.models import UsageView
from autoscaler.settings.tree import PolicySettings, PrometheusSettings
from tests.conftest import PrometheusSession
from tests.support.prom.dcgm import A100
from tests.support.prom_histories import Area

pytestmark = pytest.mark.real

HOUR = timedelta(hours=1)
ONE_VIEW = (UsageView(HOUR, 0.05),)
THREE_VIEWS = (*ONE_VIEW, UsageView(HOUR / 4, 0.05), UsageView(2 * HOUR, 0.5))
# slots, busy and newest for each of the two default signals, and the recorded slots' query
# (none here: the raw read follows)
UTILIZATION = 1 + 3 * 2
RAY = 1
OFF = {"enabled": False}
CONFIGURED = {"baselines": {A100: 60.0}}  # so the power matrix is sent wherever it is read


def queries(
    session: PrometheusSession, area: Area, views: tuple[UsageView, ...], **evidence: Any
) -> int:
    at = datetime.fromtimestamp(session.anchor(area), UTC)
    settings = PrometheusSettings(url=session.server.url, evidence=evidence)
    source = PrometheusMetricSource(prometheus=settings, policy=PolicySettings())
    try:
        usage = source.read_views(views, now=at)
        assert all(one.failure is None and not one.evidence.failures for one in usage.values())
        # A new source's first read also asks once whether ranges are left-open: not a
        # per-cycle query (tests/adapters/test_prometheus_adapter.py shows the next read's).
        return source.queries_issued - 1
    finally:
        source.close()


@pytest.mark.parametrize(
    ("evidence", "expected"),
    [
        pytest.param({}, UTILIZATION + 3 + 2 + RAY, id="every-signal-learned-baseline"),
        pytest.param({"power": OFF}, UTILIZATION + 3 + RAY, id="power-off"),
        pytest.param(
            {"power": {"learnBaseline": False, **CONFIGURED}},
            UTILIZATION + 4 + RAY,
            id="configured-baseline-only",
        ),
        pytest.param(
            {"framebuffer": OFF, "power": OFF, "pcie": OFF, "nvlink": OFF, "ray": OFF},
            UTILIZATION,
            id="no-evidence",
        ),
    ],
)
def test_queries_grow_with_the_signals_not_with_the_views(
    prometheus_session: PrometheusSession, evidence: dict[str, Any], expected: int
) -> None:
    for views in (ONE_VIEW, THREE_VIEWS):
        assert queries(prometheus_session, Area.DEVICE_EVIDENCE, views, **evidence) == expected


def test_one_gpu_and_a_hundred_cost_the_same_queries(
    prometheus_session: PrometheusSession,
) -> None:
    alone = queries(prometheus_session, Area.ONE_GPU, ONE_VIEW, power=CONFIGURED)
    fleet = queries(prometheus_session, Area.PROMETHEUS_ADAPTER, ONE_VIEW, power=CONFIGURED)
    assert alone == fleet == UTILIZATION + 3 + 2 + RAY


def test_without_any_baseline_the_power_matrix_is_not_sent(
    prometheus_session: PrometheusSession,
) -> None:
    """The adapter's fleet has no power series: nothing is learned, nothing else is asked."""
    assert (
        queries(prometheus_session, Area.PROMETHEUS_ADAPTER, ONE_VIEW) == UTILIZATION + 3 + 1 + RAY
    )
