"""The fault suite's harness: a small cast of RayClusters in a test's own namespaces, the real
service over the real adapters, cycles run by hand, and the three checks every fault test makes.

    with FaultRig.build(kube, exporter, settings=..., namespace="faults-1a2b", ...) as rig:
        proxy.respond_with_status(503, times=None)   # the fault, from the start
        rig.hold()        # cycles under it until the idle ones are due, and a little longer
        proxy.reset()
        rig.recovers()    # the idle ones are deactivated within a window plus a cycle
        rig.assert_safe() # nothing wrongful, no exemption or pause lost

The cast (one GPU each, first admitted a minute ago, so past its grace period):
idle-a and idle-b at 0 % (the only ones that may ever be deactivated), busy at 85 %, unknown
(no series at all), exempt (annotated, at 0 %) and, in a second namespace under a pause,
paused (at 0 %). An idle workload falls due about a window after it is seeded. A dry-run
control beside the service, on paths no fault touches (Prometheus directly, its own token on
the API server), says when: `hold` keeps the fault on until the control sees every idle
workload due, then two cycles more, so each fault is shown to stand between a due workload
and its deactivation. API server faults use `when=rig.from_service` to spare the control.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import timedelta
from enum import Enum
from typing import Any

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kueue.cached import CachedKueueCluster
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.compose.serve import build_cluster, build_metric_source, build_shared_state
from autoscaler.compose.service import build_service
from autoscaler.core.clock import SystemClock
from autoscaler.domain import annotations as keys
from autoscaler.domain.models import Action, Pauses, Snapshot
from autoscaler.domain.policy.decisions import Policy
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings
from tests.support.builders import make_raycluster
from tests.support.cluster_emulator import ClusterEmulator
from tests.support.decision_builders import decide_fleet
from tests.support.kube_server import KubeServer, RecordedRequest
from tests.support.prom import FakeDcgmExporter, Gpu
from tests.support.seeding import (
    BackdatedClock,
    annotate_raycluster,
    gpus_of,
    seed_queues,
    submit,
    workload_of,
)
from tests.support.usage_reads import read_one_view

WINDOW_S = 3.0
CYCLE_S = 0.5  # the pause between two cycles (a cycle itself takes a few tens of ms)
# Between a value changing on the exporter and a query seeing it: one scrape interval, the
# scrape itself and the query's evaluation.
SCRAPE_LAG_S = 1.5
DUE_WITHIN_S = 15.0  # the control must see the idle ones due by then (a healthy run: ~4 s)
OVERLAP_S = 2 * CYCLE_S  # the fault outlasts their falling due by this much
RECOVERY_S = WINDOW_S + CYCLE_S + SCRAPE_LAG_S  # "within one window plus one cycle"


class Role(Enum):
    IDLE = "idle"
    BUSY = "busy"
    UNKNOWN = "unknown"
    EXEMPT = "exempt"
    PAUSED = "paused"


UTILIZATION = {Role.IDLE: 0.0, Role.BUSY: 85.0, Role.EXEMPT: 0.0, Role.PAUSED: 0.0}
CAST = {
    "idle-a": Role.IDLE,
    "idle-b": Role.IDLE,
    "busy": Role.BUSY,
    "unknown": Role.UNKNOWN,
    "exempt": Role.EXEMPT,
    "paused": Role.PAUSED,
}


def fault_settings(namespace: str, *, prometheus: dict[str, Any], **extra: Any) -> Settings:
    return Settings.model_validate(raw_fault_settings(namespace, prometheus=prometheus, **extra))


def raw_fault_settings(
    namespace: str, *, prometheus: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    """Seconds-long windows on the live exporter (scraped every second), acting, in our
    namespaces only, with the runtime state in a service namespace of our own; `extra`
    sections are merged in. As a config file would say it."""
    raw: dict[str, Any] = {
        "prometheus": {"timeout": "1s", **prometheus},
        "policy": {
            "thresholdPercent": 5,
            "idleWindow": f"{WINDOW_S:g}s",
            "gracePeriod": "20s",
            "minCoverage": 0.5,
            "slot": "1s",
            "staleAfter": "5s",
            "idleSinceLookback": "5m",
            # The faults are judged against the window alone; the warning stage's own e2e is
            # tests/e2e/test_warn_snooze_notify.py (and the seed and contended stories warn).
            "warnBefore": "0s",
            "dryRun": False,
            "namespaces": {"include": [namespace, f"{namespace}-p"]},
        },
        "cluster": {"serviceNamespace": f"{namespace}-svc", "requestTimeout": "2s"},
        "loop": {"interval": f"{CYCLE_S:g}s"},
        "watchCache": {
            "watchTimeout": "1s",
            "backoffInitial": "50ms",
            "backoffMax": "1s",
            "syncTimeout": "5s",
        },
    }
    for section, values in extra.items():
        raw[section] = {**raw.get(section, {}), **values}
    return raw


@dataclass
class Control:
    """A dry-run judge on fault-free paths: which RayClusters a healthy service would
    deactivate now."""

    cluster: KueueCluster
    metrics: PrometheusMetricSource
    policy: Policy
    clock: SystemClock = field(default_factory=SystemClock)

    def due(self) -> set[str]:
        now = self.clock.now()
        workloads = [w for w in self.cluster.list_workloads() if w.active]
        rules = self.policy.default_rule.usage
        usage = read_one_view(self.metrics, window=rules.window, threshold=rules.threshold, now=now)
        decisions = decide_fleet(workloads, usage, policy=self.policy, pauses=Pauses(), now=now)
        return {
            w.owner.name
            for w, d in zip(workloads, decisions, strict=True)
            if w.owner is not None and d.action is Action.WOULD_DEACTIVATE
        }


@dataclass
class FaultRig:
    server: KubeServer
    exporter: FakeDcgmExporter
    namespace: str
    settings: Settings
    cluster: KueueCluster
    emulator: ClusterEmulator
    run_cycle: Callable[[], Snapshot]
    control: Control
    token: str  # the service's bearer token on the API server
    roles: dict[str, Role] = field(default_factory=dict)  # RayCluster name -> role
    gpus: dict[str, list[Gpu]] = field(default_factory=dict)
    snapshots: list[Snapshot] = field(default_factory=list)

    @property
    def paused_namespace(self) -> str:
        return f"{self.namespace}-p"

    def home(self, name: str) -> str:
        return self.paused_namespace if self.roles[name] is Role.PAUSED else self.namespace

    # -- the cast -------------------------------------------------------------------------------

    def add(self, name: str, role: Role) -> None:
        """Submit a one-GPU RayCluster, let Kueue admit it, and report its GPU as its role says."""
        self.roles[name] = role
        raycluster = make_raycluster(self.home(name), name).head(gpus=1).queue("user-queue")
        if role is Role.EXEMPT:
            raycluster = raycluster.annotation(keys.EXEMPT, "true")
        submit(self.server, raycluster.build())
        self.emulator.sync()
        self.gpus[name] = gpus_of(self.server, self.home(name), name)
        if role in UTILIZATION:
            self.set_utilization(name, UTILIZATION[role])

    def exempt(self, name: str) -> None:
        """A user exempts it now (`kubectl annotate raycluster ... exempt=true`)."""
        self.roles[name] = Role.EXEMPT
        annotate_raycluster(self.server, self.home(name), name, **{keys.EXEMPT: "true"})

    def set_utilization(self, name: str, percent: float) -> None:
        for gpu in self.gpus[name]:
            self.exporter.set(gpu, utilization=percent)

    def remove_series(self, name: str) -> None:
        for gpu in self.gpus[name]:
            self.exporter.remove(gpu)

    def names(self, role: Role) -> list[str]:
        return [name for name, r in self.roles.items() if r is role]

    # -- driving --------------------------------------------------------------------------------

    def cycle(self) -> Snapshot:
        snapshot = self.run_cycle()
        self.emulator.sync()
        self.snapshots.append(snapshot)
        return snapshot

    def hold(
        self,
        *,
        due: Iterable[str] | None = None,
        during: Callable[[], None] | None = None,
    ) -> None:
        """Cycle under the fault until the control sees `due` (every idle one by default)
        due, then for OVERLAP_S more; `during` runs before each cycle."""
        waiting = set(self.names(Role.IDLE) if due is None else due)
        deadline = time.monotonic() + DUE_WITHIN_S
        overlap_ends: float | None = None
        while overlap_ends is None or time.monotonic() < overlap_ends:
            if during is not None:
                during()
            self.cycle()
            if overlap_ends is None and not self._not_due(waiting):
                overlap_ends = time.monotonic() + OVERLAP_S
            assert time.monotonic() < deadline, f"never due: {self._not_due(waiting)}"
            time.sleep(CYCLE_S)

    def _not_due(self, names: set[str]) -> set[str]:
        """Those a healthy service would not deactivate now (the deactivated ones are done)."""
        return names - self.control.due() - {n for n in names if self.deactivated(n)}

    def from_service(self, request: RecordedRequest) -> bool:
        """For `faults.fail_next(when=...)`: the service's requests, not the control's."""
        return request.token == self.token

    def recovers(self, *, within: float = RECOVERY_S) -> float:
        """Cycles until every idle workload is deactivated; the seconds it took."""
        began = time.monotonic()
        while not all(self.deactivated(name) for name in self.names(Role.IDLE)):
            elapsed = time.monotonic() - began
            assert elapsed <= within, (
                f"idle workloads still active {elapsed:.1f}s after the fault cleared: "
                f"{self.describe()}"
            )
            self.cycle()
            time.sleep(CYCLE_S)
        return time.monotonic() - began

    # -- what happened --------------------------------------------------------------------------

    def deactivated(self, name: str) -> bool:
        workload = workload_of(self.server, self.home(name), name)
        return workload["spec"].get("active", True) is False

    def patched(self) -> list[str]:
        """The RayClusters whose Workload got a deactivation patch (tried, even if refused)."""
        return [name for name, _ in self.deactivation_requests()]

    def deactivation_requests(self) -> list[tuple[str, RecordedRequest]]:
        """Each deactivation patch sent in our namespaces, with the RayCluster it was for."""
        names = {self.workload_name(n): n for n in self.roles}
        found = []
        for request in self.server.requests.matching("PATCH", "/apis/kueue.x-k8s.io/"):
            namespace, _, name = _namespaced(request.path)
            if namespace in (self.namespace, self.paused_namespace) and request.deactivates:
                found.append((names.get(name, name), request))
        return found

    def wrongful(self) -> list[str]:
        return [name for name in self.patched() if self.roles.get(name) is not Role.IDLE]

    def assert_safe(self) -> None:
        """Zero wrongful deactivations, and no exemption or pause lost."""
        assert self.wrongful() == [], f"wrongful deactivations: {self.wrongful()}"
        for name, role in self.roles.items():
            if role is not Role.IDLE:
                assert not self.deactivated(name), f"{name} ({role.value}) was deactivated"
        for name in self.names(Role.EXEMPT):
            owner = self.server.store.get(
                "rayclusters.ray.io", name=name, namespace=self.home(name)
            )
            assert owner["metadata"]["annotations"].get(keys.EXEMPT) == "true", f"{name} lost it"
        pauses = self.cluster.read_pauses()
        assert pauses.covers(self.paused_namespace), f"the pause was lost: {pauses}"

    def describe(self) -> list[str]:
        last = self.snapshots[-1] if self.snapshots else None
        if last is None:
            return []
        return [
            f"{r.ref}: {r.decision.state} {r.decision.reason}"
            for r in last.workloads
            if r.ref.namespace in (self.namespace, self.paused_namespace)
        ]

    def workload_name(self, name: str) -> str:
        return str(workload_of(self.server, self.home(name), name)["metadata"]["name"])

    # -- building -------------------------------------------------------------------------------

    @classmethod
    @contextmanager
    def build(
        cls,
        server: KubeServer,
        exporter: FakeDcgmExporter,
        *,
        settings: Settings,
        namespace: str,
        prometheus_url: str,
        cast: dict[str, Role] = CAST,
    ) -> Iterator[FaultRig]:
        """`prometheus_url`: the session's Prometheus itself, for the control."""
        token = f"service-{namespace}"
        timeout = settings.cluster.request_timeout
        client = KubeClient(api_client_for(server.configuration(token=token)), timeout=timeout)
        control_client = KubeClient(
            api_client_for(server.configuration(token=f"control-{namespace}")), timeout=timeout
        )
        cluster = build_cluster(settings, client)
        metrics = build_metric_source(settings)
        clock, logger = SystemClock(), logging.getLogger(f"faults.{namespace}")
        shared = build_shared_state(
            settings, client=client, cluster=cluster, clock=clock, logger=logger
        )
        service = build_service(
            settings,
            cluster=cluster,
            metrics=metrics,
            clock=clock,
            logger=logger,
            shared=shared,
        )  # as `serve` builds it, guards included
        paused = f"{namespace}-p"
        seed_queues(
            server, cluster_queue=f"cq-{namespace}", namespaces=[namespace, paused], gpus=64
        )
        emulator = ClusterEmulator(
            server, clock=BackdatedClock().now, namespaces=[namespace, paused]
        )
        direct = settings.prometheus.model_copy(update={"url": prometheus_url})
        control = Control(
            KueueCluster(client=control_client, settings=settings.cluster),
            PrometheusMetricSource(prometheus=direct, policy=settings.policy),
            replace(build_policy(settings), dry_run=True),
        )
        rig = cls(
            server,
            exporter,
            namespace,
            settings,
            cluster,
            emulator,
            service.reconciler.run_once,
            control,
            token,
        )
        try:
            pause = Pauses(namespaces=frozenset({paused}))
            shared.store.change(lambda state: replace(state, pauses=pause))
            for name, role in cast.items():
                rig.add(name, role)
            yield rig
        finally:
            for gpus in rig.gpus.values():
                for gpu in gpus:
                    exporter.remove(gpu)
            server.faults.clear()
            if isinstance(cluster, CachedKueueCluster):
                cluster.stop(timedelta(seconds=5))
            metrics.close()
            control.metrics.close()
            client.close()
            control_client.close()
            for owned in (namespace, paused, settings.cluster.service_namespace):  # leave no trace
                server.store.delete_namespace(owned)
            server.store.delete("clusterqueues.kueue.x-k8s.io", name=f"cq-{namespace}")


def _namespaced(path: str) -> tuple[str, str, str]:
    """(namespace, plural, name) of `/apis/g/v/namespaces/NS/PLURAL/NAME`, blanks if not one."""
    parts = path.strip("/").split("/")
    if "namespaces" not in parts:
        return "", "", ""
    at = parts.index("namespaces")
    rest = [*parts[at + 1 : at + 4], "", "", ""]
    return rest[0], rest[1], rest[2]
