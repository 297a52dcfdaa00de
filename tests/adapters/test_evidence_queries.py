"""How many queries a fleet read sends once evidence is read (ISSUE 16), against the session's
real Prometheus: utilization's (tests/support/read_counts.py), one per enabled evidence signal
(Ray's included), one more for the learned power baseline, and the power matrix only once
some model has a baseline. The evidence queries are the same for one view or three, and the
read's the same for one GPU or a hundred.
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
from tests.support.read_counts import utilization_queries

pytestmark = pytest.mark.real

HOUR = timedelta(hours=1)
ONE_VIEW = (UsageView(HOUR, 0.05),)
THREE_VIEWS = (*ONE_VIEW, UsageView(HOUR / 4, 0.05), UsageView(2 * HOUR, 0.5))
# The utilization queries of one view; none of these histories' GPUs is read per slot.
UTILIZATION = utilization_queries(1, per_slot=False)
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
        return source.queries_issued
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
def test_evidence_queries_grow_with_the_signals_not_with_the_views(
    prometheus_session: PrometheusSession, evidence: dict[str, Any], expected: int
) -> None:
    for views in (ONE_VIEW, THREE_VIEWS):
        more_views = utilization_queries(len(views), per_slot=False) - UTILIZATION
        sent = queries(prometheus_session, Area.DEVICE_EVIDENCE, views, **evidence)
        assert sent == expected + more_views


def test_a_hundred_gpus_cost_the_queries_of_one_and_the_per_slot_query_of_those_with_holes(
    prometheus_session: PrometheusSession,
) -> None:
    alone = queries(prometheus_session, Area.ONE_GPU, ONE_VIEW, power=CONFIGURED)
    fleet = queries(prometheus_session, Area.PROMETHEUS_ADAPTER, ONE_VIEW, power=CONFIGURED)
    assert alone == UTILIZATION + 3 + 2 + RAY
    assert fleet == utilization_queries(1, per_slot=True) + 3 + 2 + RAY


def test_without_any_baseline_the_power_matrix_is_not_sent(
    prometheus_session: PrometheusSession,
) -> None:
    """The adapter's fleet has no power series: nothing is learned, nothing else is asked."""
    utilization = utilization_queries(1, per_slot=True)  # the fleet has GPUs with holes
    assert (
        queries(prometheus_session, Area.PROMETHEUS_ADAPTER, ONE_VIEW) == utilization + 3 + 1 + RAY
    )
