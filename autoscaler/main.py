"""The composition root: builds every part once, starts them, stops them cleanly.

Nothing else in the package constructs adapters or reads settings; `serve` wires the real
adapters, and the demo wires the simulated ones into the same `build_service`.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from types import FrameType
from typing import Protocol

from autoscaler.adapters.kube_client import KubeClient
from autoscaler.adapters.kueue import KueueCluster
from autoscaler.adapters.kueue_cached import CachedKueueCluster
from autoscaler.adapters.prometheus import PrometheusMetricSource
from autoscaler.adapters.prometheus_range import PrometheusRange
from autoscaler.adapters.promql import QueryTemplates
from autoscaler.api.assembly import build_api, build_api_on, build_auth, token_checker
from autoscaler.backtest.command import run_backtest
from autoscaler.clock import SystemClock
from autoscaler.config import QuerySettings, Settings
from autoscaler.domain.idleness import UsageRules
from autoscaler.domain.policy import Policy
from autoscaler.guard_store import RuntimeGuardStore
from autoscaler.guarding import Guards
from autoscaler.keda.answers import KedaAnswers
from autoscaler.keda.http import keda_router
from autoscaler.keda.server import KedaGrpcServer
from autoscaler.keda.targets import Judging
from autoscaler.leader import LeaderElector, default_identity
from autoscaler.logs import configure_logging
from autoscaler.ports import AuditLog, Clock, Cluster, GuardState, MetricSource
from autoscaler.runtime_state import RuntimeStateStore
from autoscaler.scheduler import LoopRunner
from autoscaler.service import Reconciler
from autoscaler.sim.api_backends import SimulatedRuntimeState, new_token, simulated_backends
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.demo import Endpoint, quiet_logger, run_demo
from autoscaler.sim.demo_servers import LOOPBACK, free_port, running, serve_on_loopback
from autoscaler.sim.story import World
from autoscaler.snapshots import SnapshotStore


class GuardStore(AuditLog, GuardState, Protocol):
    """The audit trail and the guards' memory, kept together in the runtime-state ConfigMap."""


class Server(Protocol):
    """Anything served beside the loop (gRPC, HTTP): started before it, stopped after it."""

    def start(self) -> object: ...

    def stop(self) -> None: ...


def build_policy(settings: Settings) -> Policy:
    policy = settings.policy
    return Policy(
        rules=UsageRules(
            threshold=policy.threshold_percent / 100,
            window=policy.idle_window,
            slot=policy.slot,
            min_coverage=policy.min_coverage,
            stale_after=policy.stale_after,
        ),
        grace_period=policy.grace_period,
        actionable_kinds=frozenset(
            kind for kind, table in settings.cluster.owner_kinds.items() if table.enabled
        ),
        protected_priority_classes=frozenset(policy.protected_priority_classes),
        include_namespaces=frozenset(policy.namespaces.include),
        exclude_namespaces=frozenset(policy.namespaces.exclude),
        max_deactivations_per_cycle=policy.max_deactivations_per_cycle,
        dry_run=policy.dry_run,
    )


@dataclass
class Service:
    """The running parts of one process."""

    reconciler: Reconciler
    store: SnapshotStore
    loop: LoopRunner
    servers: list[Server] = field(default_factory=list)
    keda_answers: KedaAnswers | None = None

    def start(self) -> None:
        for server in self.servers:
            server.start()
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop()  # the current cycle finishes: no half-done action
        for server in reversed(self.servers):
            server.stop()


def build_service(
    settings: Settings,
    *,
    cluster: Cluster,
    metrics: MetricSource,
    clock: Clock,
    logger: logging.Logger,
    bind_host: str = "[::]",
    is_leader: Callable[[], bool] | None = None,
    guard_store: GuardStore | None = None,
) -> Service:
    """`is_leader`: only the leader acts; every replica decides and publishes snapshots.
    `guard_store`: where the guards keep the audit trail, the breaker and contested marks
    (the runtime-state ConfigMap); without it the loop runs unguarded (unit tests only)."""
    store = SnapshotStore()
    policy = build_policy(settings)
    keda = settings.keda
    guards = None
    if guard_store is not None:
        guards = Guards(
            rules=settings.guards.rules(max_per_hour=settings.policy.max_deactivations_per_hour),
            policy=policy,
            audit=guard_store,
            state=guard_store,
            metrics=metrics,
            interval=settings.loop.interval,
            logger=logger.getChild("guards"),
        )
    reconciler = Reconciler(
        cluster=cluster,
        metrics=metrics,
        policy=policy,
        clock=clock,
        publish=store.publish,
        logger=logger.getChild("decisions"),
        profiles=keda.profile_rules(policy.rules) if keda.enabled else None,
        keda_addresses=keda.addresses(settings.cluster.service_namespace) if keda.enabled else (),
        guards=guards,
        is_leader=is_leader,
    )
    loop = LoopRunner(
        run_cycle=reconciler.run_once,
        interval=settings.loop.interval,
        logger=logger.getChild("loop"),
    )
    service = Service(reconciler=reconciler, store=store, loop=loop)
    if keda.enabled:
        service.keda_answers = build_keda_answers(
            settings, policy=policy, store=store, clock=clock, logger=logger
        )
        service.servers.append(
            KedaGrpcServer(
                answers=service.keda_answers,
                store=store,
                tls=keda.tls,
                heartbeat=keda.heartbeat_interval,
                address=f"{bind_host}:{keda.port}",
                logger=logger.getChild("keda"),
            )
        )
    return service


def build_keda_answers(
    settings: Settings, *, policy: Policy, store: SnapshotStore, clock: Clock,
    logger: logging.Logger,
) -> KedaAnswers:  # fmt: skip
    return KedaAnswers(
        latest=store.latest,
        judging=Judging(policy.rules, policy.grace_period),
        profiles=settings.keda.profiles.keys(),
        clock=clock,
        # Older than three cycles: the loop is stuck, and KEDA must hold, not scale to zero.
        max_snapshot_age=max(3 * settings.loop.interval, timedelta(seconds=30)),
        logger=logger.getChild("keda"),
    )


def query_templates(queries: QuerySettings) -> QueryTemplates:
    """The configured PromQL templates, the built-in ones where unset."""
    chosen = {key: value for key, value in queries.model_dump().items() if value is not None}
    return QueryTemplates(**chosen)


def build_metric_source(settings: Settings) -> PrometheusMetricSource:
    return PrometheusMetricSource(
        prometheus=settings.prometheus,
        policy=settings.policy,
        templates=query_templates(settings.prometheus.queries),
    )


def add_rest_api(
    service: Service,
    settings: Settings,
    *,
    client: KubeClient,
    cluster: KueueCluster,
    clock: Clock,
    logger: logging.Logger,
) -> None:
    """The REST API (and KEDA's metrics-api endpoint) on one HTTP port beside the loop."""
    auth = build_auth(settings.api, cluster_settings=settings.cluster, client=client)
    routers = []
    if service.keda_answers is not None:
        routers.append(keda_router(answers=service.keda_answers, authenticate=token_checker(auth)))
    service.servers.append(
        build_api(
            settings.api,
            cluster_settings=settings.cluster,
            client=client,
            cluster=cluster,
            store=service.store,
            clock=clock,
            logger=logger.getChild("api"),
            auth=auth,
            routers=routers,
        )
    )


@dataclass
class StopOnly:
    """A part that starts by itself (watch caches fill on the first cycle) but must be
    stopped with the service."""

    stop_part: Callable[[], object]

    def start(self) -> None:
        return None

    def stop(self) -> None:
        self.stop_part()


def build_cluster(settings: Settings, client: KubeClient) -> KueueCluster:
    """Watch caches by default, so a steady cycle makes no list calls."""
    if settings.watch_cache.enabled:
        return CachedKueueCluster(
            client=client, settings=settings.cluster, cache=settings.watch_cache
        )
    return KueueCluster(client=client, settings=settings.cluster)


def build_guard_store(
    settings: Settings, *, client: KubeClient, clock: Clock, logger: logging.Logger
) -> RuntimeGuardStore:
    state = RuntimeStateStore(
        client=client,
        name=settings.cluster.runtime_state_config_map,
        namespace=settings.cluster.service_namespace,
        audit_limit=settings.api.audit_record_limit,
        attempts=settings.api.write_attempts,
        logger=logger.getChild("state"),
    )
    return RuntimeGuardStore(store=state, audit_limit=settings.api.audit_record_limit, clock=clock)


def build_elector(settings: Settings, client: KubeClient, logger: logging.Logger) -> LeaderElector:
    return LeaderElector(
        client=client,
        settings=settings.leader_election,
        namespace=settings.cluster.service_namespace,
        identity=default_identity(),
        clock=SystemClock(),
        logger=logger.getChild("leader"),
    )


def serve(settings: Settings) -> int:
    """Run until SIGTERM or SIGINT, then finish the current cycle and stop."""
    logger = configure_logging(format_name=settings.logging.format, level=settings.logging.level)
    client = KubeClient.from_settings(settings.cluster)
    cluster = build_cluster(settings, client)
    clock = SystemClock()
    elector = build_elector(settings, client, logger) if settings.leader_election.enabled else None
    service = build_service(
        settings,
        cluster=cluster,
        metrics=build_metric_source(settings),
        clock=clock,
        logger=logger,
        is_leader=elector.is_leader if elector else None,
        guard_store=build_guard_store(settings, client=client, clock=clock, logger=logger),
    )
    # Servers stop in reverse, after the loop: the Lease is released only once the last cycle
    # (and any action in it) is over, and the caches outlive both.
    first: list[Server] = []
    if isinstance(cluster, CachedKueueCluster):
        first.append(StopOnly(lambda: cluster.stop(timedelta(seconds=5))))
    if elector is not None:
        first.append(StopOnly(lambda: elector.stop(timeout=5)))
        elector.start()
    service.servers[:0] = first
    add_rest_api(service, settings, client=client, cluster=cluster, clock=clock, logger=logger)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        logger.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    mode = "dry-run: deciding and reporting only" if settings.policy.dry_run else "acting"
    logger.info("idle-gpu-autoscaler serving (%s)", mode)
    service.start()
    stop.wait()
    service.stop()
    logger.info("stopped cleanly")
    return 0


def demo(args: argparse.Namespace) -> int:
    """The embedded default: the real service on a simulated cluster, exporter and clock,
    with the REST API and the KEDA scaler on loopback for the story and `--duration`."""
    token = new_token()
    keda_port = free_port(LOOPBACK)
    states: dict[int, SimulatedRuntimeState] = {}  # per world: the story and its dry-run replay

    def build(
        settings: Settings, *, cluster: Cluster, metrics: MetricSource, clock: Clock,
        logger: logging.Logger,
    ) -> Service:  # fmt: skip
        """The same guards as `serve`, over an in-memory runtime state the API shares."""
        assert isinstance(cluster, SimulatedCluster)
        limit = settings.api.audit_record_limit
        state = states[id(cluster)] = SimulatedRuntimeState(cluster=cluster, audit_limit=limit)
        return build_service(
            settings, cluster=cluster, metrics=metrics, clock=clock, logger=logger,
            bind_host=LOOPBACK,
            guard_store=RuntimeGuardStore(store=state, audit_limit=limit, clock=clock),
        )  # fmt: skip

    @contextmanager
    def servers(world: World) -> Iterator[list[Endpoint]]:
        service = world.service
        assert isinstance(service, Service)  # made by `build`
        backends = simulated_backends(
            world.cluster,
            clock=world.clock,
            settings=world.settings,
            token=token,
            state=states.get(id(world.cluster)),
        )
        answers, check = service.keda_answers, token_checker(backends.auth)
        routers = [keda_router(answers=answers, authenticate=check)] if answers else []
        api = build_api_on(
            world.settings.api,
            backends=backends,
            store=service.store,
            clock=world.clock,
            logger=quiet_logger().getChild("api"),
            routers=routers,
        )
        with running([*service.servers, api]):
            yield [
                ("REST", f"http://{LOOPBACK}:{api.server.port}"),
                ("gRPC", f"{LOOPBACK}:{keda_port}"),
                ("token", token),
            ]

    return run_demo(
        args,
        build_service=build,
        configure=lambda settings: serve_on_loopback(settings, keda_port=keda_port),
        extra_servers=servers,
    )


def backtest(settings: Settings, args: argparse.Namespace) -> int:
    """What this policy would have done on the Prometheus history."""
    source = PrometheusRange(prometheus=settings.prometheus)
    try:
        return run_backtest(args, settings=settings, policy=build_policy(settings), source=source)
    finally:
        source.close()
