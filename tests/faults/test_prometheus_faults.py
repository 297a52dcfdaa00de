"""Faults on the metrics path, injected by the auth proxy in front of the session's Prometheus.

Every fault starts as soon as the cast is seeded and lasts until the idle workloads have been
due for two cycles (see tests/faults/rig.py). Each test then checks the same three things: no
wrongful deactivation, the idle ones deactivated within a window plus a cycle of the fault
clearing, and no exemption or pause lost.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.domain.models import State
from tests.faults.rig import RECOVERY_S, FaultRig, Role
from tests.support.prom import AuthProxy

pytestmark = pytest.mark.slow


def assert_all_unknown_meanwhile(rig: FaultRig) -> None:
    """While the whole read fails, nothing was deactivated and nothing read as idle."""
    assert rig.patched() == [], f"acted during the fault: {rig.patched()}"
    for snapshot in rig.snapshots:
        assert not snapshot.metrics_ok, "a read succeeded during the fault"


def test_without_a_fault_the_idle_ones_are_deactivated_about_a_window_after_seeding(
    rig: FaultRig,
) -> None:
    rig.recovers(within=RECOVERY_S)
    assert sorted(rig.patched()) == rig.names(Role.IDLE)
    rig.assert_safe()


@pytest.mark.parametrize(
    "outage",
    [pytest.param("503", id="answering-503"), pytest.param("refused", id="connection-refused")],
)
def test_prometheus_down_deactivates_nothing_and_acts_once_it_is_back(
    rig: FaultRig, proxy: AuthProxy, outage: str
) -> None:
    if outage == "503":
        proxy.respond_with_status(503, body="no healthy upstream", times=None)
    else:
        proxy.stop()
    rig.hold()
    assert_all_unknown_meanwhile(rig)

    proxy.reset()
    if not proxy.running:
        proxy.start()
    rig.recovers()
    rig.assert_safe()


def test_prometheus_slower_than_the_timeout_deactivates_nothing_and_acts_once_fast_again(
    rig: FaultRig, proxy: AuthProxy
) -> None:
    timeout = rig.settings.prometheus.timeout.total_seconds()
    proxy.delay(timeout + 1.0, times=None)
    rig.hold()
    assert_all_unknown_meanwhile(rig)
    assert any("did not answer in time" in e for s in rig.snapshots for e in s.errors)

    proxy.reset()
    rig.recovers()
    rig.assert_safe()


@pytest.mark.parametrize(
    "status, envelope",
    [
        pytest.param(500, True, id="error-envelope-500"),
        pytest.param(502, False, id="bare-502"),
    ],
)
def test_prometheus_answering_5xx_deactivates_nothing_and_acts_once_it_answers(
    rig: FaultRig, proxy: AuthProxy, status: int, envelope: bool
) -> None:
    if envelope:
        proxy.respond_with_error(status=status, error_type="internal", error="boom", times=None)
    else:
        proxy.respond_with_status(status, body="bad gateway", times=None)
    rig.hold()
    assert_all_unknown_meanwhile(rig)

    proxy.reset()
    rig.recovers()
    rig.assert_safe()


def test_a_partial_answer_with_warnings_deactivates_nothing_until_answers_are_whole(
    rig: FaultRig, proxy: AuthProxy
) -> None:
    proxy.inject_warnings("partial response: store gpu-1 unavailable", times=None)
    rig.hold()
    assert rig.patched() == []
    idle = {rig.workload_name(name) for name in rig.names(Role.IDLE)}
    for snapshot in rig.snapshots:
        states = {r.ref.name: r.decision.state for r in snapshot.workloads if r.ref.name in idle}
        assert set(states.values()) == {State.UNKNOWN}, states

    proxy.reset()
    rig.recovers()
    rig.assert_safe()


def test_nan_values_deactivate_nothing_until_real_values_return(
    rig: FaultRig, proxy: AuthProxy
) -> None:
    proxy.serve_nan(times=None)
    rig.hold()
    assert rig.patched() == []

    proxy.reset()
    rig.recovers()
    rig.assert_safe()


def test_series_disappearing_for_some_pods_leaves_those_alone_until_they_are_back(
    rig: FaultRig,
) -> None:
    """dcgm-exporter restarting on two nodes: the busy pod's and idle-a's series vanish.
    idle-b's series stays, so it is deactivated on time meanwhile."""
    rig.remove_series("busy")
    rig.remove_series("idle-a")
    rig.hold(due=["idle-b"])
    assert "idle-a" not in rig.patched(), "deactivated while its series was missing"
    assert rig.deactivated("idle-b")

    rig.set_utilization("busy", 85)
    rig.set_utilization("idle-a", 0)
    rig.recovers()
    rig.assert_safe()


@pytest.mark.parametrize(
    "refusal", [pytest.param(401, id="401-unauthorized"), pytest.param(403, id="403-forbidden")]
)
def test_the_auth_proxy_refusing_in_plain_text_deactivates_nothing_until_it_admits_us(
    rig: FaultRig, proxy: AuthProxy, refusal: int
) -> None:
    token = proxy.token
    if refusal == 401:
        proxy.token = "someone-else"
    else:
        proxy.denied.add(token)
    rig.hold()
    assert_all_unknown_meanwhile(rig)
    assert any(f"HTTP {refusal}" in e for s in rig.snapshots for e in s.errors), [
        s.errors for s in rig.snapshots
    ]

    proxy.token = token
    proxy.denied.clear()
    rig.recovers()
    rig.assert_safe()


def test_a_token_rotated_mid_run_is_read_again_from_the_file(
    rig: FaultRig, proxy: AuthProxy, token_file: Path
) -> None:
    """The proxy starts expecting the new token before the kubelet rewrites the file: until
    then every read is refused (401); after, the same adapter sends the new one."""
    rig.cycle()
    assert rig.snapshots[-1].metrics_ok
    proxy.token = "faults-token-2"
    rig.hold()
    assert rig.patched() == []

    token_file.write_text("faults-token-2\n", encoding="utf-8")
    rig.recovers()
    rig.assert_safe()
    assert {r.token for r in proxy.queries()[-4:]} == {"faults-token-2"}
