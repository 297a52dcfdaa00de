"""The backtest's evidence queries against a real Prometheus, on a backfilled history.

`backtest_loading` in tests/support/prom_histories.py: a RayCluster's GPU busy at 80 % until
I = end - 11 h, then at 1 %, its framebuffer (DCGM_FI_DEV_FB_USED, MiB) climbing one GiB a
minute from C = I + 10 min for 20 minutes, then flat. Samples every 60 s at 7 s past the
minute, so the slot ending at C + 1 min is the first to rise and C + 20 min the last.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.prometheus.range import PrometheusRange
from autoscaler.domain.usage.evidence import Signal
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.tree import PrometheusSettings
from tests.conftest import PrometheusSession
from tests.support.prom import gpu_uuid
from tests.support.prom_histories import LOADING_CLIMB, LOADING_IDLE, Area

from .evidence_chain import evidence_at

pytestmark = pytest.mark.real

H, M = 3600, 60
LOADER = GpuKey("loading", "loading-rc-head-abcde", gpu_uuid("n7", 0))


@pytest.fixture(scope="module")
def source(prometheus_session: PrometheusSession) -> Iterator[PrometheusRange]:
    server = prometheus_session.server
    found = PrometheusRange(prometheus=PrometheusSettings(url=server.url))
    try:
        yield found
    finally:
        found.close()


@pytest.fixture(scope="module")
def end(prometheus_session: PrometheusSession) -> int:
    return prometheus_session.anchor(Area.BACKTEST)


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def test_framebuffer_climbing_at_one_percent_compute_gives_sightings_in_that_span(
    source: PrometheusRange, end: int
) -> None:
    climb, idle = end - LOADING_CLIMB, end - LOADING_IDLE
    times = [climb, climb + 10 * M, climb + 20 * M, climb + 20 * M + 75 * M]

    found = evidence_at(
        source, times, keys=[LOADER], start=idle - H, end=idle + 2 * H, chunk=timedelta(minutes=30)
    )

    sighted = {
        now: [(s.signal, s.first_at, s.last_at, s.detail) for s in evidence.for_gpu(LOADER)]
        for now, evidence in found.items()
    }
    rising = (Signal.FRAMEBUFFER, at(climb + M))
    assert sighted == {
        climb: [],
        climb + 10 * M: [(*rising, at(climb + 10 * M), "framebuffer rose 10.0 GiB")],
        climb + 20 * M: [(*rising, at(climb + 20 * M), "framebuffer rose 20.0 GiB")],
        climb + 95 * M: [],  # out of the reach (window and one coarse step): flat says nothing
    }
    assert all(not e.failures for e in found.values())
