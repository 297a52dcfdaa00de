"""The usage classes end to end on real parts (ISSUE 16): dcgm-exporter series shapes
backfilled into the session's real Prometheus (tests/support/evidence_histories.py cites each
shape's source), read by the real metric source with every evidence signal on, and judged by
the policy under the shipped defaults (5 %, a 60-minute window, `maxLoading` 60 minutes).

Each case is one RayCluster whose GPU pod `worker-0` is the history's, admitted hours before.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.prometheus.device_evidence import DeviceEvidenceReader
from autoscaler.adapters.prometheus.evidence_base import EvidenceReader
from autoscaler.adapters.prometheus.evidence_readers import evidence_readers
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.domain.models import Decision, FleetUsage, Pauses, State, UsageView
from autoscaler.domain.policy.decisions import decide
from autoscaler.domain.usage.evidence import Signal
from autoscaler.settings.evidence import FramebufferSettings
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import PolicySettings, PrometheusSettings, Settings
from tests.conftest import PrometheusSession
from tests.support.domain_builders import a_workload
from tests.support.prom_histories import Area

pytestmark = pytest.mark.real

POLICY = build_policy(Settings())
VIEW = UsageView(POLICY.default_rule.usage.window, POLICY.default_rule.usage.threshold)


def read(session: PrometheusSession, *, readers: list[EvidenceReader] | None = None) -> FleetUsage:
    at = datetime.fromtimestamp(session.anchor(Area.DEVICE_EVIDENCE), UTC)
    settings = PrometheusSettings(url=session.server.url)
    made = PrometheusMetricSource(prometheus=settings, policy=PolicySettings(), readers=readers)
    try:
        return made.read_views([VIEW], now=at)[VIEW]
    finally:
        made.close()


def judged(namespace: str, fleet: FleetUsage) -> Decision:
    admitted = fleet.evaluated_at - timedelta(hours=3)
    workload = (
        a_workload(namespace, "rc")
        .gpu_pod("worker-0", created=admitted)
        .admitted(at=admitted)
        .created_at(admitted)
        .build()
    )
    return decide(workload, fleet, policy=POLICY, pauses=Pauses(), now=fleet.evaluated_at)


@pytest.fixture(scope="module")
def fleet(prometheus_session: PrometheusSession) -> FleetUsage:
    return read(prometheus_session)


@pytest.mark.parametrize(
    ("namespace", "state", "said"),
    [
        pytest.param("loading", State.LOADING, "framebuffer", id="fb-climbing-at-0-2pct"),
        pytest.param("loading-honor", State.LOADING, "framebuffer", id="fb-climbing-honor-labels"),
        pytest.param("held", State.IDLE, "idle for the whole window", id="60gib-flat-at-0pct"),
        pytest.param(
            "mig-quiet", State.IDLE, "idle for the whole window", id="mig-neighbour-loads"
        ),
        pytest.param("mig-loading", State.LOADING, "framebuffer", id="mig-instance-loading"),
        pytest.param("copying", State.LOADING, "PCIe", id="pcie-host-to-device-copy"),
        pytest.param("peer", State.LOADING, "NVLink", id="nvlink-peer-copy"),
        pytest.param("warm", State.IDLE, "idle for the whole window", id="75w-under-the-bar"),
        pytest.param(
            "drawing", State.IDLE, "loading for over 60m without compute", id="power-for-hours"
        ),
        pytest.param("l4", State.BUSY, "above threshold", id="busy-compute"),
    ],
)
def test_each_series_shape_gets_its_class(
    fleet: FleetUsage, namespace: str, state: State, said: str
) -> None:
    decision = judged(namespace, fleet)
    assert decision.state is state, decision.reason
    assert said in decision.reason or any(said in line for line in decision.evidence)


def test_only_idle_workloads_would_be_stopped_never_loading_ones(fleet: FleetUsage) -> None:
    cases = ("loading", "held", "mig-quiet", "mig-loading", "copying", "peer", "warm", "l4")
    due = {name for name in (*cases, "drawing") if judged(name, fleet).action.value != "none"}
    # `drawing` has stood over its baseline for hours at 0-2 %: loading no longer counts
    assert due == {"held", "mig-quiet", "warm", "drawing"}


def test_a_failing_evidence_query_makes_the_idle_workloads_unknown_not_idle(
    prometheus_session: PrometheusSession,
) -> None:
    # Built directly: settings refuse the name; the real server refuses the query.
    broken = DeviceEvidenceReader(Signal.FRAMEBUFFER, "DCGM_FI_DEV_FB_USED{", 256)
    defaults = PrometheusSettings()
    others = evidence_readers(
        defaults.evidence.model_copy(update={"framebuffer": FramebufferSettings(enabled=False)}),
        compute=defaults.signals,
    )
    fleet = read(prometheus_session, readers=[broken, *others])
    held = judged("held", fleet)
    assert held.state is State.UNKNOWN and held.action.value == "none"
    assert "evidence signal framebuffer failed" in held.reason
    assert judged("l4", fleet).state is State.BUSY  # compute busy now stays busy
