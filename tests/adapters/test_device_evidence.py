"""Device evidence (framebuffer, power, PCIe and NVLink receive) read from the session's real
Prometheus, over the backfilled shapes of tests/support/evidence_histories.py (one case per
namespace, pod `worker-0`), read at their end `at`.

Where each shape comes from: FB_USED is dcgm-exporter's framebuffer-used gauge in MiB and
POWER_USAGE its power draw in W (dcgm-exporter etc/default-counters.csv); the PCIe/NVLink
receive gauges are bytes per second (etc/dcp-metrics-included.csv). A MIG board exports the
framebuffer per GPU instance (dcgm-exporter issue #317) and repeats the board's power on each
instance (issue #257).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.adapters.prometheus.device_evidence import DeviceEvidenceReader
from autoscaler.adapters.prometheus.evidence_readers import evidence_readers
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.domain.models import UsageView
from autoscaler.domain.usage.evidence import FleetEvidence, Sighting, Signal
from autoscaler.settings.evidence import FramebufferSettings
from autoscaler.settings.tree import PolicySettings, PrometheusSettings
from tests.conftest import PrometheusSession
from tests.support.prom.dcgm import A100
from tests.support.prom_histories import Area

pytestmark = pytest.mark.real

MINUTE = timedelta(minutes=1)
VIEW = UsageView(timedelta(hours=1), 0.05)
VIEWS = (VIEW, UsageView(15 * MINUTE, 0.05), UsageView(2 * VIEW.window, 0.5))
UTILIZATION_QUERIES = 3
POD = "worker-0"
# The learned A100 baseline: the 0.1 quantile of the compute-idle A100s' mean draw (eight free
# GPUs at 58..65 W, `warm` 75, the MIG board 180 once for its two instances, `drawing` 212 at
# 0-2 % compute): rank 0.1 x (11 - 1) = 1 of the sorted draws.
LEARNED_A100 = 59.0


@pytest.fixture(scope="module")
def at(prometheus_session: PrometheusSession) -> datetime:
    return datetime.fromtimestamp(prometheus_session.anchor(Area.DEVICE_EVIDENCE), UTC)


@pytest.fixture
def build(prometheus_session: PrometheusSession) -> Iterator[Any]:
    """Builds sources from `prometheus.evidence` overrides and closes them after the test."""
    built: list[PrometheusMetricSource] = []

    def made(**evidence: Any) -> PrometheusMetricSource:
        settings = PrometheusSettings(url=prometheus_session.server.url, evidence=evidence)
        built.append(PrometheusMetricSource(prometheus=settings, policy=PolicySettings()))
        return built[-1]

    yield made
    for source in built:
        source.close()


@pytest.fixture(scope="module")
def evidence(prometheus_session: PrometheusSession, at: datetime) -> FleetEvidence:
    settings = PrometheusSettings(url=prometheus_session.server.url)
    source = PrometheusMetricSource(prometheus=settings, policy=PolicySettings())
    try:
        usage = source.read_views([VIEW], now=at)[VIEW]
    finally:
        source.close()
    assert usage.failure is None and not usage.evidence.failures
    return usage.evidence


def seen(evidence: FleetEvidence, namespace: str, signal: Signal) -> list[Sighting]:
    return [
        sighting
        for key, found in evidence.gpus.items()
        if (key.namespace, key.pod) == (namespace, POD)
        for sighting in found
        if sighting.signal is signal
    ]


def keys_with(evidence: FleetEvidence, signal: Signal) -> set[str]:
    return {
        key.namespace for key, found in evidence.gpus.items() for s in found if s.signal is signal
    }


@pytest.mark.parametrize("namespace", ["loading", "loading-honor"])
def test_framebuffer_climbing_3_gib_a_minute_at_near_zero_compute_is_a_sighting(
    evidence: FleetEvidence, at: datetime, namespace: str
) -> None:
    [sighting] = seen(evidence, namespace, Signal.FRAMEBUFFER)
    assert sighting.detail == "framebuffer grew 60.0 GiB over 20m"
    assert (sighting.first_at, sighting.last_at) == (at - 19 * MINUTE, at)
    assert not sighting.device_level


def test_a_gpu_holding_60_gib_flat_at_zero_compute_has_no_evidence(
    evidence: FleetEvidence,
) -> None:
    assert [key for key in evidence.gpus if key.namespace == "held"] == []


def test_a_mig_instance_whose_neighbour_loads_has_no_framebuffer_sighting_of_its_own(
    evidence: FleetEvidence,
) -> None:
    on_board = [key for key in evidence.gpus if key.namespace.startswith("mig-")]
    loading = [key for key in on_board if seen(evidence, key.namespace, Signal.FRAMEBUFFER)]
    assert [(key.namespace, key.mig_instance) for key in loading] == [("mig-loading", "2")]
    assert seen(evidence, "mig-quiet", Signal.FRAMEBUFFER) == []


def test_the_power_of_a_mig_board_is_seen_on_each_instance_as_device_level(
    evidence: FleetEvidence,
) -> None:
    for namespace in ("mig-quiet", "mig-loading"):
        [sighting] = seen(evidence, namespace, Signal.POWER)
        assert sighting.device_level
        assert sighting.detail == "power 180 W, idle baseline 59 W"


def test_pcie_receive_during_a_host_to_device_copy_is_a_device_level_sighting(
    evidence: FleetEvidence, at: datetime
) -> None:
    [sighting] = seen(evidence, "copying", Signal.PCIE)
    assert sighting.detail == "PCIe receiving 2.5 GB/s" and sighting.device_level
    assert at - 11 * MINUTE <= sighting.first_at <= at - 9 * MINUTE and sighting.last_at == at


def test_nvlink_receive_is_a_device_level_sighting(evidence: FleetEvidence) -> None:
    [sighting] = seen(evidence, "peer", Signal.NVLINK)
    assert sighting.detail == "NVLink receiving 8.0 GB/s" and sighting.device_level


def test_the_power_baseline_is_learned_per_model_from_compute_idle_gpus(
    evidence: FleetEvidence,
) -> None:
    assert evidence.power_baselines.keys() == {A100}, "no L4 was idle: no L4 baseline"
    assert evidence.power_baselines[A100] == pytest.approx(LEARNED_A100)


@pytest.mark.parametrize(
    ("namespace", "detail"),
    [
        pytest.param("drawing", "power 212 W, idle baseline 59 W", id="212-w-over-59-is-seen"),
        pytest.param("warm", None, id="75-w-under-baseline-plus-margin-is-not"),
        pytest.param("l4", None, id="a-model-without-baseline-gives-no-power-evidence"),
    ],
)
def test_power_counts_only_above_the_models_baseline_plus_the_margin(
    evidence: FleetEvidence, namespace: str, detail: str | None
) -> None:
    assert [s.detail for s in seen(evidence, namespace, Signal.POWER)] == (
        [detail] if detail else []
    )


def test_a_configured_baseline_overrides_the_learned_one(build: Any, at: datetime) -> None:
    source = build(power={"baselines": {A100: 200.0}})
    evidence = source.read_views([VIEW], now=at)[VIEW].evidence
    assert evidence.power_baselines[A100] == 200.0
    assert seen(evidence, "drawing", Signal.POWER) == [], "212 W is under 200 + 30"


def test_a_signal_whose_series_are_missing_gives_no_sighting_and_no_failure(
    build: Any, at: datetime
) -> None:
    source = build(nvlink={"metric": "DCGM_FI_PROF_NVLINK_RX_BYTES_NOT_EXPORTED"})
    evidence = source.read_views([VIEW], now=at)[VIEW].evidence
    assert keys_with(evidence, Signal.NVLINK) == set() and not evidence.failures
    assert seen(evidence, "copying", Signal.PCIE) != []


def test_a_failing_signal_query_fails_that_signal_and_leaves_the_others(
    prometheus_session: PrometheusSession, at: datetime
) -> None:
    # Settings refuse a name that is not a metric name; built directly, the framebuffer
    # reader sends a query the real server refuses, as a broken exporter rename would.
    settings = PrometheusSettings(url=prometheus_session.server.url)
    broken = DeviceEvidenceReader(Signal.FRAMEBUFFER, "DCGM_FI_DEV_FB_USED{", 256)
    others = evidence_readers(
        settings.evidence.model_copy(update={"framebuffer": FramebufferSettings(enabled=False)}),
        compute=settings.signals,
    )
    source = PrometheusMetricSource(
        prometheus=settings, policy=PolicySettings(), readers=[broken, *others]
    )
    try:
        usage = source.read_views([VIEW], now=at)[VIEW]
    finally:
        source.close()
    assert usage.failure is None and usage.gpus, "utilization still read"
    assert usage.evidence.failures.keys() == {Signal.FRAMEBUFFER}
    assert "bad_data" in usage.evidence.failures[Signal.FRAMEBUFFER]
    assert keys_with(usage.evidence, Signal.FRAMEBUFFER) == set()
    assert seen(usage.evidence, "copying", Signal.PCIE) != []
    assert seen(usage.evidence, "drawing", Signal.POWER) != []


def test_every_view_of_a_read_carries_the_same_evidence(build: Any, at: datetime) -> None:
    usage = build().read_views(VIEWS, now=at)
    [shared] = {id(one.evidence) for one in usage.values()}
    assert seen(usage[VIEW].evidence, "loading", Signal.FRAMEBUFFER) != []
    assert shared == id(usage[VIEWS[1]].evidence)


def test_the_fresh_check_brings_the_candidates_newest_evidence_in_its_one_query(
    build: Any, at: datetime
) -> None:
    source = build()
    source.read_views([VIEW], now=at)  # learns the power baseline the fresh check uses
    before = source.queries_issued
    pods = [(ns, POD) for ns in ("loading", "held", "drawing", "copying", "mig-quiet")]
    latest = source.read_latest(pods, now=at)
    assert source.queries_issued == before + 1 and latest.failure is None
    found = {
        (key.namespace, s.signal, s.detail, s.device_level)
        for key, sightings in latest.evidence.gpus.items()
        for s in sightings
    }
    assert found == {
        ("loading", Signal.FRAMEBUFFER, "framebuffer grew 3.0 GiB over 1m", False),
        ("drawing", Signal.POWER, "power 212 W, idle baseline 59 W", True),
        ("copying", Signal.PCIE, "PCIe receiving 2.5 GB/s", True),
        ("mig-quiet", Signal.POWER, "power 180 W, idle baseline 59 W", True),
    }
    assert len(latest.for_pod("held", POD)) == 1, "utilization samples read as before"
    [sample] = latest.for_pod("loading", POD)
    assert sample.value is not None and sample.value <= 0.02, "evidence rows are not samples"
    assert all(s.first_at == s.last_at == at for f in latest.evidence.gpus.values() for s in f)


def test_the_fresh_check_asks_no_power_before_a_baseline_is_known(build: Any, at: datetime) -> None:
    latest = build().read_latest([("drawing", POD), ("loading", POD)], now=at)
    assert keys_with(latest.evidence, Signal.POWER) == set()
    assert keys_with(latest.evidence, Signal.FRAMEBUFFER) == {"loading"}


def test_the_fresh_check_uses_a_configured_baseline_before_any_read(
    build: Any, at: datetime
) -> None:
    source = build(power={"learnBaseline": False, "baselines": {A100: 100.0}})
    latest = source.read_latest([("drawing", POD), ("warm", POD)], now=at)
    found = {(key.namespace, s.detail) for key, f in latest.evidence.gpus.items() for s in f}
    assert found == {("drawing", "power 212 W, idle baseline 100 W")}, "75 W is under 100 + 30"
