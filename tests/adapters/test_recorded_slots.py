"""The recorded slots against the raw read, on a Prometheus holding both (recorded_rig.py:
the adapter's corpus raw, and what the generated rules record over it, backfilled by promtool
from the rules file itself).

Every usage view is judged from the SLOTS answer, so both paths must give the same usage and
the same decisions; where the recordings cannot be trusted (absent, stale, a missed
evaluation) the read falls back to raw, says so, and never reads anything as idle.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from autoscaler.adapters.prometheus.recording_rules import SLOT_PEAK
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.domain.models import FleetUsage, State, UsageView
from autoscaler.domain.usage.idleness import UsageRules, assess
from autoscaler.settings.tree import PolicySettings, PrometheusSettings
from tests.support.domain_builders import a_workload
from tests.support.prom import PrometheusServer
from tests.support.recorded_rig import BURST_AGO, rig_end, start_recorded_rig

pytestmark = pytest.mark.real

MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
VIEW = UsageView(HOUR, 0.05)
VIEWS = (VIEW, UsageView(15 * MINUTE, 0.05), UsageView(30 * MINUTE, 0.5))  # within RECORDED
RULES = UsageRules(
    threshold=0.05, window=HOUR, slot=MINUTE, min_coverage=0.8, stale_after=3 * MINUTE
)
LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Rig:
    server: PrometheusServer
    end: datetime  # the recordings' last slot; raw history goes on for AFTER


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    end = rig_end(int(datetime.now(UTC).timestamp()))
    server = start_recorded_rig(tmp_path_factory.mktemp("recorded"), end=end)
    try:
        _miss_one_evaluation(server, at=end - BURST_AGO)
        yield Rig(server, datetime.fromtimestamp(end, UTC))
    finally:
        server.stop()


def _miss_one_evaluation(server: PrometheusServer, *, at: int) -> None:
    """lone-burst's recorded slot holding its only burst goes, as if the ruler had missed it."""
    match = f'{SLOT_PEAK}{{workload_namespace="lone-burst"}}'
    reply = requests.post(
        f"{server.url}/api/v1/admin/tsdb/delete_series",
        params={"match[]": match, "start": at, "end": at + 59.999},  # evaluated in that minute
        timeout=10,
    )
    reply.raise_for_status()


@dataclass
class Seen:
    """What the source told its observer, read after read."""

    reads: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, *, source: str, fallback: str | None, raw_gpus: int) -> None:
        self.reads.append({"source": source, "fallback": fallback, "raw_gpus": raw_gpus})


def read(
    rig: Rig,
    *,
    now: datetime,
    mode: str,
    seen: Seen | None = None,
    views: tuple[UsageView, ...] = VIEWS,
) -> dict[UsageView, FleetUsage]:
    settings = PrometheusSettings(url=rig.server.url, recorded_series={"mode": mode})
    source = PrometheusMetricSource(prometheus=settings, policy=PolicySettings())
    source.slots.observer = seen
    try:
        return source.read_views(views, now=now)
    finally:
        source.close()


def decisions(usage: FleetUsage, now: datetime) -> dict[str, tuple[State, datetime | None]]:
    """Each namespace's workload (its pod worker-0) as the policy judges it."""
    found = {}
    for namespace, pod in usage.gpus:
        workload = a_workload(namespace, "w").gpu_pod(pod).build()
        judged = assess(workload, usage, rules=RULES, not_before=LONG_AGO, now=now)
        found[namespace] = (judged.state, judged.idle_since)
    return found


@pytest.mark.parametrize("offset", [0, -30, -20 * 60])
def test_recorded_and_raw_reads_give_the_same_usage_and_decisions(rig: Rig, offset: int) -> None:
    now, seen = rig.end + timedelta(seconds=offset), Seen()
    recorded, raw = read(rig, now=now, mode="auto", seen=seen), read(rig, now=now, mode="off")
    assert seen.reads[-1]["source"] == "recorded"
    assert seen.reads[-1]["raw_gpus"] < 20, "most GPUs come from the recordings"
    for view in VIEWS:
        assert recorded[view] == raw[view], view
    assert decisions(recorded[VIEW], now) == decisions(raw[VIEW], now)
    states = {state for state, _ in decisions(raw[VIEW], now).values()}
    assert {State.IDLE, State.BUSY, State.UNKNOWN} <= states


def test_a_missed_evaluation_hiding_a_burst_reads_that_gpu_raw_and_busy(rig: Rig) -> None:
    burst_slot = rig.end - timedelta(seconds=BURST_AGO)
    hidden = rig.server.query(
        f'{SLOT_PEAK}{{workload_namespace="lone-burst"}}[59999ms]',
        at=burst_slot.timestamp() + 59.999,
    )
    assert hidden == [], "the rig lost the recorded slot"
    seen = Seen()
    usage = read(rig, now=rig.end, mode="auto", seen=seen)[VIEW]
    [gpu] = usage.for_pod("lone-burst", "worker-0")
    assert gpu.peak == pytest.approx(0.95) and gpu.last_busy_at == burst_slot
    workload = a_workload("lone-burst", "w").gpu_pod("worker-0").build()
    judged = assess(workload, usage, rules=RULES, not_before=LONG_AGO, now=rig.end)
    assert judged.idle_since == burst_slot and judged.idle_for < RULES.window  # not yet
    assert seen.reads[-1]["fallback"] == "holes" and seen.reads[-1]["raw_gpus"] >= 1


def test_a_restart_mid_idle_gives_the_same_idle_since_through_both_paths(rig: Rig) -> None:
    before, after = rig.end - 20 * MINUTE, rig.end
    read(rig, now=before, mode="auto")  # the process that stops
    recorded, raw = read(rig, now=after, mode="auto")[VIEW], read(rig, now=after, mode="off")[VIEW]
    since = {key: gpu.last_busy_at for key, gpus in recorded.gpus.items() for gpu in gpus}
    assert since == {key: gpu.last_busy_at for key, gpus in raw.gpus.items() for gpu in gpus}
    assert since[("recently-busy", "worker-0")] == rig.end - 20 * MINUTE
    assert since[("busy-2h-ago", "worker-0")] is not None  # beyond the slots: from BUSY


@pytest.mark.parametrize(
    ("after", "reason"),
    [
        pytest.param(10 * MINUTE, "stale", id="stale"),
        pytest.param(85 * MINUTE, "absent", id="absent"),  # beyond the 76 min reach
    ],
)
def test_stale_or_absent_recordings_fall_back_to_raw_with_a_warning_and_never_idle_more(
    rig: Rig, after: timedelta, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    now, seen = rig.end + after, Seen()
    with caplog.at_level(logging.WARNING):
        usage = read(rig, now=now, mode="auto", seen=seen, views=(VIEW,))
    assert seen.reads == [{"source": "raw", "fallback": reason, "raw_gpus": 0}]
    assert any(f"usage read from raw series: {reason}" in r.message for r in caplog.records)
    assert usage == read(rig, now=now, mode="off", views=(VIEW,))


def test_a_recorded_read_costs_the_same_queries_for_one_view_or_several(rig: Rig) -> None:
    def queries(views: tuple[UsageView, ...]) -> int:
        settings = PrometheusSettings(url=rig.server.url)
        source = PrometheusMetricSource(prometheus=settings, policy=PolicySettings())
        try:
            source.read_views(views, now=rig.end)
            return source.queries_issued - 1  # less the first read's range semantics probe
        finally:
            source.close()

    # the recorded slots; per signal the tail, the GPUs with holes, BUSY and NEWEST; then the
    # evidence (framebuffer, PCIe, NVLink, Ray, the learned power baseline)
    assert queries((VIEW,)) == queries(VIEWS) == 1 + 4 * 2 + 5
