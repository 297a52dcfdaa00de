"""Faults of the process itself: `idle-gpu-autoscaler serve` as a real child process (a
kubeconfig for the test API server, the auth proxy in front of the session's Prometheus),
killed with SIGKILL and started again, or run as two replicas electing a leader on a Lease.

Nothing of an idle window lives in the process: "idle since" is read back from Prometheus'
history, so a restart neither starts the window over (forgetting) nor cuts it short.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.faults.rig import CYCLE_S, SCRAPE_LAG_S, FaultRig, Role, raw_fault_settings
from tests.support.kube_server import ApiError, Change, KubeServer
from tests.support.prom import AuthProxy, free_port
from tests.support.serve_process import ServeProcess, write_config, write_kubeconfig

pytestmark = pytest.mark.slow

WINDOW_S = 8.0  # room for a kill and a restart (about 2.5 s) inside the window
SERVE_CYCLE_S = 1.0
KILLED_AFTER_S = 2.5  # into the window
SCRAPE_S = 1.0  # the last busy sample is at most one scrape before the exporter changed
KILL_CAST = {
    "trainer": Role.BUSY,  # goes idle during the test
    "busy": Role.BUSY,
    "unknown": Role.UNKNOWN,
    "exempt": Role.EXEMPT,
    "paused": Role.PAUSED,
}


class Deactivations:
    """When each Workload in the test's namespaces got `spec.active: false` (monotonic)."""

    def __init__(self, server: KubeServer, namespaces: set[str]) -> None:
        self.at: dict[str, float] = {}
        self._namespaces = namespaces
        self._lock = threading.Lock()
        self.unsubscribe = server.on_change(self._saw)

    def _saw(self, change: Change) -> None:
        meta, spec = change.object["metadata"], change.object.get("spec") or {}
        if change.kind != "Workload" or meta.get("namespace") not in self._namespaces:
            return
        if spec.get("active", True) is False:
            owner = meta["ownerReferences"][0]["name"]
            with self._lock:
                self.at.setdefault(owner, time.monotonic())


@pytest.fixture
def deactivations(kube_server: KubeServer, namespace: str) -> Iterator[Deactivations]:
    seen = Deactivations(kube_server, {namespace, f"{namespace}-p"})
    yield seen
    seen.unsubscribe()


def serve_config(
    tmp_path: Path,
    server: KubeServer,
    *,
    namespace: str,
    prometheus: dict[str, Any],
    token: str,
    **sections: Any,
) -> Path:
    raw = raw_fault_settings(namespace, prometheus=prometheus, **sections)
    kubeconfig = write_kubeconfig(tmp_path / f"kubeconfig-{token}", server, token=token)
    raw["cluster"]["kubeconfig"] = str(kubeconfig)
    raw["api"] = {"host": "127.0.0.1", "port": free_port()}
    raw["logging"] = {"format": "json"}
    return write_config(tmp_path / f"config-{token}.yaml", raw)


def cycles_logged(serve: ServeProcess) -> int:
    return sum(1 for message in serve.messages() if message.startswith("cycle "))


def seconds_to_start(config: Path, tmp_path: Path) -> float:
    """How long `serve` takes from its start to its first cycle, on this machine now."""
    probe = ServeProcess(config, log=tmp_path / "start-probe.log")
    with probe:
        started = time.monotonic()
        return (
            wait_for(lambda: cycles_logged(probe) >= 1, within=60, what="a first cycle") - started
        )


def wait_for(check: Callable[[], bool], *, within: float, what: str) -> float:
    """Poll until `check` holds; the monotonic time it first did."""
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"not within {within}s: {what}"
        time.sleep(0.05)
    return time.monotonic()


def test_a_process_killed_mid_window_and_restarted_neither_acts_early_nor_forgets(
    *,
    make_rig: Callable[..., FaultRig],
    kube_server: KubeServer,
    prometheus_config: dict[str, Any],
    namespace: str,
    deactivations: Deactivations,
    tmp_path: Path,
) -> None:
    def config_with(window_s: float) -> Path:
        return serve_config(
            tmp_path,
            kube_server,
            namespace=namespace,
            prometheus=prometheus_config,
            token=f"serve-{namespace}",
            policy={"idleWindow": f"{window_s:g}s"},
            loop={"interval": f"{SERVE_CYCLE_S:g}s"},
        )

    # The restart must come back inside the window to show anything, and a start takes what
    # the machine's load makes it take: the window is sized from a start measured just now.
    window_s = max(
        WINDOW_S, KILLED_AFTER_S + SCRAPE_S + 2 * seconds_to_start(config_with(WINDOW_S), tmp_path)
    )
    sections = {"policy": {"idleWindow": f"{window_s:g}s"}, "loop": {"interval": "1s"}}
    rig = make_rig(cast=KILL_CAST, **sections)
    serve = ServeProcess(config_with(window_s), log=tmp_path / "serve.log")
    with serve:
        wait_for(lambda: cycles_logged(serve) >= 2, within=20, what="the first cycles")
        rig.set_utilization("trainer", 0)
        rig.roles["trainer"] = Role.IDLE
        went_idle = time.monotonic()
        time.sleep(KILLED_AFTER_S)
        serve.kill()
        before = cycles_logged(serve)
        serve.start()
        back = wait_for(lambda: cycles_logged(serve) > before, within=20, what="a cycle after")
        latest = went_idle + window_s + SERVE_CYCLE_S + SCRAPE_LAG_S + CYCLE_S
        wait_for(
            lambda: "trainer" in deactivations.at,
            within=latest - time.monotonic() + 1,
            what="the deactivation once the window completed",
        )

    acted = deactivations.at["trainer"] - went_idle
    assert back - went_idle < window_s - SCRAPE_S, "restarted too late to show anything"
    assert acted >= window_s - SCRAPE_S, f"acted {acted:.1f}s into an {window_s:g}s window"
    assert acted <= latest - went_idle, f"acted only {acted:.1f}s after going idle"
    assert rig.patched() == ["trainer"]
    rig.assert_safe()


LEADER_WINDOW_S = 7.0  # a kill a third in, a 3 s Lease to expire, then the rest of the window
# Each query slowed by this much: a cycle's dozen queries outlast the 1 s loop interval, so the
# replicas are always mid-cycle, and a slowed cycle (about 2 s) still leaves the deadline below
# room on two busy cores (at 0.3 s a cycle took some 4 s and the deadline was met by luck).
SLOWED_QUERY_S = 0.15
LEADER_ELECTION = {
    "enabled": True,
    "leaseDuration": "3s",
    "renewDeadline": "2s",
    "retryPeriod": "500ms",
}


def lease_holder(server: KubeServer, namespace: str) -> str:
    try:
        lease = server.store.get(
            "leases.coordination.k8s.io", name="idle-gpu-autoscaler", namespace=f"{namespace}-svc"
        )
    except ApiError:
        return ""
    return str(lease["spec"].get("holderIdentity") or "")


def replicas(
    tmp_path: Path,
    server: KubeServer,
    *,
    namespace: str,
    prometheus: dict[str, Any],
    **sections: Any,
) -> dict[str, ServeProcess]:
    """Two `serve` processes sharing one Lease; each is its POD_NAME and its API token."""
    made = {}
    for identity in ("replica-1", "replica-2"):
        config = serve_config(
            tmp_path,
            server,
            namespace=namespace,
            prometheus=prometheus,
            token=identity,
            leaderElection=LEADER_ELECTION,
            **sections,
        )
        made[identity] = ServeProcess(
            config, log=tmp_path / f"{identity}.log", env={"POD_NAME": identity}
        )
    return made


def test_two_replicas_at_once_deactivate_each_idle_workload_once_from_the_leader(
    rig: FaultRig,
    kube_server: KubeServer,
    prometheus_config: dict[str, Any],
    namespace: str,
    tmp_path: Path,
) -> None:
    both = replicas(tmp_path, kube_server, namespace=namespace, prometheus=prometheus_config)
    with both["replica-1"], both["replica-2"]:
        wait_for(lambda: lease_holder(kube_server, namespace) != "", within=20, what="a leader")
        wait_for(
            lambda: all(rig.deactivated(n) for n in rig.names(Role.IDLE)),
            within=20,
            what="the idle ones deactivated",
        )
        time.sleep(2 * SERVE_CYCLE_S)  # room for a second replica's patch, if it sends one
        leader = lease_holder(kube_server, namespace)

    by = {(name, request.token) for name, request in rig.deactivation_requests()}
    assert by == {(name, leader) for name in rig.names(Role.IDLE)}, by
    assert sorted(rig.patched()) == rig.names(Role.IDLE), "a workload was patched twice"
    rig.assert_safe()


def test_the_leader_dying_mid_cycle_hands_over_and_the_window_still_holds(
    *,
    make_rig: Callable[..., FaultRig],
    kube_server: KubeServer,
    proxy: AuthProxy,
    prometheus_config: dict[str, Any],
    namespace: str,
    deactivations: Deactivations,
    tmp_path: Path,
) -> None:
    """Queries slowed so that a cycle outlasts the loop interval: the replicas are always
    mid-cycle, so SIGKILL lands in one. The leader deactivates idle-a; the trainer goes idle
    and the leader dies in the middle of its window. The Lease is not released: the other
    replica takes over once it expires, and deactivates the trainer when its window
    completes, not before."""
    window = LEADER_WINDOW_S
    sections = {"policy": {"idleWindow": f"{window:g}s"}, "loop": {"interval": "1s"}}
    rig = make_rig(cast={"idle-a": Role.IDLE, **KILL_CAST}, **sections)
    both = replicas(
        tmp_path, kube_server, namespace=namespace, prometheus=prometheus_config, **sections
    )
    proxy.delay(SLOWED_QUERY_S, times=None)
    with both["replica-1"], both["replica-2"]:
        wait_for(lambda: lease_holder(kube_server, namespace) != "", within=20, what="a leader")
        leader = lease_holder(kube_server, namespace)
        follower = next(name for name in both if name != leader)
        wait_for(lambda: "idle-a" in deactivations.at, within=20, what="idle-a deactivated")
        rig.set_utilization("trainer", 0)
        rig.roles["trainer"] = Role.IDLE
        went_idle = time.monotonic()
        time.sleep(window / 3)
        both[leader].kill()
        wait_for(
            lambda: lease_holder(kube_server, namespace) == follower,
            within=10,
            what="the follower taking the Lease",
        )
        took_over = time.monotonic() - went_idle
        latest = went_idle + window + 3 * SERVE_CYCLE_S + SCRAPE_LAG_S
        wait_for(
            lambda: "trainer" in deactivations.at,
            within=latest - time.monotonic() + 1,
            what="the deactivation by the new leader",
        )

    acted = deactivations.at["trainer"] - went_idle
    assert took_over < window - SCRAPE_S, f"took over {took_over:.1f}s in: too late to show it"
    assert acted >= window - SCRAPE_S, f"acted {acted:.1f}s into a {window:g}s window"
    by = [(name, request.token) for name, request in rig.deactivation_requests()]
    assert by == [("idle-a", leader), ("trainer", follower)], by
    rig.assert_safe()
