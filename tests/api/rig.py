"""A running service for API tests: the test Kubernetes API server, the real Kueue adapter,
a Reconciler over fake metrics with the composition root's listeners (metrics, loop audit,
exemption limit), and the API on uvicorn on a loopback port.

    with ApiRig() as rig:
        name = rig.add_raycluster("team-a", "alice-rc", idle=True)
        rig.cycle()
        rig.reader.get("/api/v1/workloads").json()   # reads as the admin, who may read all
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any

import httpx
from fastapi import APIRouter
from kubernetes.client import ApiClient
from prometheus_client import CollectorRegistry

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.api.context import NO_SNOOZE_NOTIFICATIONS, SnoozeNotifications
from autoscaler.compose.api import Api, Auth, build_api, build_auth, keda_metrics_router
from autoscaler.compose.loop_parts import subscribe_listeners
from autoscaler.compose.serve import build_reader, build_shared_state
from autoscaler.compose.service import build_keda_answers
from autoscaler.core.ports import ClusterReader
from autoscaler.domain.models import FleetUsage, GpuUsage, Snapshot, UsageView
from autoscaler.domain.policy.decisions import Policy
from autoscaler.domain.usage.fresh import LatestSample, LatestUsage
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.engine.metrics.telemetry import ServiceMetrics
from autoscaler.settings.actuators import ActuatorSettings
from autoscaler.settings.api import ApiSettings
from autoscaler.settings.cluster import OwnerKindSettings
from autoscaler.settings.ha import WatchCacheSettings
from autoscaler.settings.keda import KedaSettings
from autoscaler.settings.tree import ClusterSettings, Settings
from tests.support.builders import make_pod, make_raycluster, make_workload_for
from tests.support.domain_builders import a_policy
from tests.support.fakes import FakeClock
from tests.support.kube_server import KubeServer
from tests.support.loop_builders import a_loop, a_screen

SERVICE_NAMESPACE = "idle-gpu-autoscaler"
STATE_CONFIG_MAP = "idle-gpu-autoscaler-state"
TOKENS = {"alice": "alice-token", "bob": "bob-token", "admin": "admin-token"}


@dataclass
class Usage:
    """Fake Prometheus: per (namespace, pod), its GPUs' peak utilization and their count."""

    peaks: dict[tuple[str, str], tuple[float, int]] = field(default_factory=dict)
    failing: bool = False

    def read_views(
        self, views: Collection[UsageView], *, now: datetime
    ) -> dict[UsageView, FleetUsage]:
        return {view: self._read(view.window, view.threshold, now=now) for view in views}

    def read_latest(self, pods: Sequence[tuple[str, str]], *, now: datetime) -> LatestUsage:
        """The fresh check's newest samples: each GPU at its peak, sampled `now`."""
        if self.failing:
            return LatestUsage(now, failure="Prometheus unreachable (test)")
        samples = {
            pod: tuple(
                LatestSample(GpuKey(*pod, f"GPU-{pod[1]}-{i}"), peak, now) for i in range(count)
            )
            for pod, (peak, count) in self.peaks.items()
            if pod in pods
        }
        return LatestUsage(now, samples=samples)

    def _read(self, window: timedelta, threshold: float, *, now: datetime) -> FleetUsage:
        if self.failing:
            return FleetUsage(window, threshold, now, failure="Prometheus unreachable (test)")
        gpus = {
            (namespace, pod): tuple(
                GpuUsage(
                    GpuKey(namespace, pod, f"GPU-{pod}-{i}"),
                    peak,
                    1.0,
                    now,
                    now if peak > threshold else None,
                )
                for i in range(count)
            )
            for (namespace, pod), (peak, count) in self.peaks.items()
        }
        return FleetUsage(window=window, threshold=threshold, evaluated_at=now, gpus=gpus)


TEAM_NAMESPACES = ("team-a", "team-b")  # where the API tests put their workloads


class ApiRig:
    def __init__(
        self,
        *,
        settings: ApiSettings | None = None,
        kube: KubeServer | None = None,
        dry_run: bool = True,
        routers: Sequence[APIRouter] = (),
        policy: Policy | None = None,
        notices: SnoozeNotifications = NO_SNOOZE_NOTIFICATIONS,
        suspending: Collection[str] = (),
        auth: Auth | None = None,
        keda: KedaSettings | None = None,
        owner_kinds: Collection[str] = (),
    ) -> None:
        """`owner_kinds`: kinds to enable in `cluster.ownerKinds` beside the defaults.
        `suspending`: the suspend actuators to enable (`kai`, `kuberay`); with any, the
        RayClusters no Workload admits are rows of their own, read as `serve` reads them.
        `auth`: the token check and permission check, else as `build_auth` makes them from
        `settings`; `keda`: serve KEDA's metrics-api endpoint too, as `serve` does."""
        self.suspending = suspending
        self.owner_kinds = owner_kinds
        self.auth = auth
        self.keda = keda
        self.routers = routers
        self.notices = notices
        self.policy = policy
        self.now = datetime.now(UTC).replace(microsecond=0)
        self.clock = FakeClock(self.now)
        self._own_kube = kube is None
        self.kube = kube or KubeServer(clock=lambda: self.now - timedelta(hours=4))
        self.settings = settings or ApiSettings(host="127.0.0.1", port=0)
        self.dry_run = dry_run
        self.usage = Usage()
        self.registry = CollectorRegistry()
        self.logger = logging.getLogger("tests.api")

    def __enter__(self) -> ApiRig:
        if self._own_kube:
            self.kube.start()
            grant_default_rights(self.kube)
        for namespace in TEAM_NAMESPACES:  # pausing a namespace needs it to exist
            self.kube.store.put(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        self._api_client = ApiClient(self.kube.configuration())
        self.client = KubeClient(self._api_client, timeout=timedelta(seconds=5))
        kinds = {
            **ClusterSettings().owner_kinds,
            **{kind: OwnerKindSettings(enabled=True) for kind in self.owner_kinds},
        }
        cluster_settings = ClusterSettings(service_namespace=SERVICE_NAMESPACE, owner_kinds=kinds)
        actuators = {name: {"enabled": True} for name in self.suspending}
        settings = Settings(
            cluster=cluster_settings,
            api=self.settings,
            actuators=ActuatorSettings.model_validate(actuators),
            watch_cache=WatchCacheSettings(enabled=False),
            keda=self.keda or KedaSettings(),
        )
        kueue = KueueCluster(client=self.client, settings=cluster_settings)
        self.cluster: ClusterReader = (
            build_reader(settings, client=self.client, kueue=kueue, logger=self.logger)
            if self.suspending
            else kueue
        )
        self.store = SnapshotStore()
        self.telemetry = ServiceMetrics(self.registry, clock=self.clock)
        self.shared = build_shared_state(
            settings, client=self.client, cluster=kueue, clock=self.clock, logger=self.logger
        )
        self.actuator = self.shared.actuator
        # The default rule's exemptions are a week's, as build_policy makes them.
        policy = self.policy or a_policy(dry_run=self.dry_run)
        subscribe_listeners(
            self.store,
            settings=self.settings,
            telemetry=self.telemetry,
            shared=self.shared,
            clock=self.clock,
            logger=self.logger,
        )
        # The guards' memory and the audit trail in the runtime-state ConfigMap, as `serve`.
        guards = self.shared.guard_store(
            audit_limit=self.settings.audit_record_limit, clock=self.clock
        )
        self.reconciler = a_loop(
            self.cluster,
            self.usage,
            actuator=self.actuator,
            policy=policy,
            clock=self.clock,
            publish=self.store.publish,
            logger=self.logger,
            audit=guards,
            screen=a_screen(metrics=self.usage, policy=policy, audit=guards, state=guards),
        )
        auth = self.auth or build_auth(
            self.settings, cluster_settings=cluster_settings, client=self.client
        )
        routers = list(self.routers)
        if self.keda is not None:
            answers = build_keda_answers(
                settings, policy=policy, store=self.store, clock=self.clock, logger=self.logger
            )
            routers.append(keda_metrics_router(answers, auth=auth, settings=settings))
        self.api: Api = build_api(
            self.settings,
            cluster_settings=cluster_settings,
            client=self.client,
            cluster=self.cluster,
            loop=self,
            clock=self.clock,
            logger=self.logger,
            auth=auth,
            routers=routers,
            policy=policy,
            notices=self.notices,
        )
        self.api.start()
        self.url = f"http://127.0.0.1:{self.api.server.port}"
        self.http = httpx.Client(base_url=self.url, timeout=10)  # no token unless given
        self.reader = httpx.Client(  # reads are authorized by default: as the admin
            base_url=self.url, timeout=10, headers=self.as_user("admin")
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.http.close()
        self.reader.close()
        self.api.stop()
        self._api_client.close()
        if self._own_kube:
            self.kube.close()

    def cycle(self) -> Snapshot:
        return self.reconciler.run_once()

    def as_user(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {TOKENS[user]}"}

    def add_raycluster(
        self,
        namespace: str,
        name: str,
        *,
        peak: float = 0.01,
        gpus: int = 1,
        annotations: dict[str, str] | None = None,
        active: bool = True,
    ) -> str:
        """A RayCluster admitted 3 hours ago with one GPU pod; returns its Workload's name."""
        admitted = self.now - timedelta(hours=3)
        builder = make_raycluster(namespace, name).head(gpus=gpus).queue("user-queue")
        for key, value in (annotations or {}).items():
            builder.annotation(key, value)
        raycluster = builder.build()
        workload = make_workload_for(raycluster).admitted(at=admitted)
        if not active:
            workload.evicted(at=admitted + timedelta(hours=1))
        pod = f"{name}-head-0"
        self.kube.store.put(raycluster)
        self.kube.store.put(workload.build())
        if active:
            self.kube.store.put(
                make_pod(namespace, pod)
                .owned_by_raycluster(raycluster)
                .gpus(gpus)
                .running(since=admitted)
                .build()
            )
        self.usage.peaks[(namespace, pod)] = (peak, gpus)
        return str(workload.build()["metadata"]["name"])

    def owner(self, namespace: str, name: str) -> dict[str, Any]:
        return self.kube.store.get("rayclusters.ray.io", name=name, namespace=namespace)

    def workload(self, namespace: str, name: str) -> dict[str, Any]:
        return self.kube.store.get("workloads.kueue.x-k8s.io", name=name, namespace=namespace)


def grant_default_rights(kube: KubeServer) -> None:
    """alice owns team-a, bob owns team-b (each may list and patch there), admin may rewrite
    the runtime-state ConfigMap and read every namespace."""
    for user, token in TOKENS.items():
        kube.reviews.add_token(token, username=user, groups=("system:authenticated",))
    for user, namespace in (("alice", "team-a"), ("bob", "team-b")):
        kube.reviews.allow(
            user=user,
            verb="patch",
            group="ray.io",
            resource="rayclusters",
            namespace=namespace,
            reason=f"{user} edits {namespace}",
        )
        kube.reviews.allow(
            user=user,
            verb="patch",
            group="kueue.x-k8s.io",
            resource="workloads",
            namespace=namespace,
            reason=f"{user} edits {namespace}",
        )
        kube.reviews.allow(
            user=user,
            verb="list",
            group="kueue.x-k8s.io",
            resource="workloads",
            namespace=namespace,
            reason=f"{user} reads {namespace}",
        )
    kube.reviews.allow(
        user="admin",
        verb="update",
        group="",
        resource="configmaps",
        namespace=SERVICE_NAMESPACE,
        name=STATE_CONFIG_MAP,
        reason="admin",
    )
    kube.reviews.allow(user="admin", verb="patch", reason="admin may patch anything")
    kube.reviews.allow(user="admin", verb="list", reason="admin may read everything")
