"""One process's running parts: the loop, its snapshot store, the metrics and listeners fed
by its snapshots (compose/loop_parts.py) and the servers beside it, built the same way for
serve and the demo. The API is added beside them (compose/api.py) and shares the metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from prometheus_client import CollectorRegistry

from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.compose.loop_parts import SharedState, build_screen, subscribe_listeners
from autoscaler.compose.notify import Notifications, build_notifications
from autoscaler.core.ports import (
    Clock,
    ClusterReader,
    GuardStore,
    KueueFeatures,
    MetricSource,
    PendingWork,
    Server,
)
from autoscaler.domain.policy.decisions import Policy
from autoscaler.engine.acting.context import ActContext, Leads, always_leads
from autoscaler.engine.cycle.reconciler import Reconciler
from autoscaler.engine.cycle.scheduler import LoopRunner
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.engine.metrics.telemetry import ServiceMetrics
from autoscaler.engine.metrics.usage_source import UsageSourceMetrics
from autoscaler.keda.answers import KedaAnswers
from autoscaler.keda.server import KedaGrpcServer
from autoscaler.keda.targets import Judging
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings


@dataclass
class Service:
    """The running parts of one process."""

    reconciler: Reconciler
    policy: Policy  # the rules the loop decides by; the API bounds snoozes and exemptions by them
    store: SnapshotStore
    loop: LoopRunner
    telemetry: ServiceMetrics  # fed by the loop's snapshots; the API serves it on /metrics
    notifications: Notifications  # the loop's notices; the API's links and snoozes use them too
    shared: SharedState  # where the loop writes; the API changes the same
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
    cluster: ClusterReader,
    metrics: MetricSource,
    clock: Clock,
    logger: logging.Logger,
    shared: SharedState,
    bind_host: str = "[::]",
    leads: Leads = always_leads,
    pending: PendingWork | None = None,  # who waits for quota (when-contended rules)
    features: KueueFeatures | None = None,  # Kueue's feature gates (via-kueue rules)
) -> Service:
    """`shared`: the runtime state (the guards' memory, the audit trail) and the actuator the
    loop, its listeners and the API write through. `leads`: only the leader writes (acts, guard
    state, loop audit, exemption cuts); every replica decides, publishes and serves."""
    store, policy = SnapshotStore(), build_policy(settings)
    telemetry = _telemetry(metrics, clock=clock)
    guards = shared.guard_store(audit_limit=settings.api.audit_record_limit, clock=clock)
    notifications = build_notifications(
        settings, registry=telemetry.registry, clock=clock, logger=logger.getChild("notify")
    )
    context = ActContext(
        cluster=cluster,
        actuator=shared.actuator,
        metrics=metrics,
        audit=guards,
        policy=policy,
        clock=clock,
        logger=logger.getChild("decisions"),
        teller=notifications.teller,
        leads=leads,
    )
    reads = _Reads(pending=pending, features=features, logger=logger)
    reconciler = _reconciler(settings, context=context, guards=guards, store=store, reads=reads)
    subscribe_listeners(
        store,
        settings=settings.api,
        telemetry=telemetry,
        shared=shared,
        clock=clock,
        logger=logger,
        leads=leads,
    )
    loop = _loop_runner(reconciler, settings=settings, telemetry=telemetry, logger=logger)
    service = Service(
        reconciler,
        policy,
        store,
        loop,
        telemetry=telemetry,
        notifications=notifications,
        shared=shared,
    )
    service.servers.append(notifications.dispatcher)  # stopped after the loop: drains its queue
    if settings.keda.enabled:
        add_keda(service, settings, policy=policy, clock=clock, logger=logger, bind_host=bind_host)
    return service


@dataclass(frozen=True)
class _Reads:
    """What the loop reads besides the cluster and Prometheus, where it is configured, and
    where the screen logs."""

    pending: PendingWork | None  # who waits for quota (when-contended rules)
    features: KueueFeatures | None  # Kueue's feature gates (via-kueue rules)
    logger: logging.Logger


def _reconciler(
    settings: Settings,
    *,
    context: ActContext,
    guards: GuardStore,
    store: SnapshotStore,
    reads: _Reads,
) -> Reconciler:
    """The loop: its act context, the screen over the guards' memory, the snapshot store."""
    screen = build_screen(
        settings, store=guards, policy=context.policy, metrics=context.metrics, logger=reads.logger
    )
    return Reconciler(
        context=context,
        screen=screen,
        publish=store.publish,
        pending=reads.pending,
        keda_addresses=_keda_addresses(settings),
        features=reads.features,
    )


def _loop_runner(
    reconciler: Reconciler, *, settings: Settings, telemetry: ServiceMetrics, logger: logging.Logger
) -> LoopRunner:
    return LoopRunner(
        run_cycle=reconciler.run_once,
        interval=settings.loop.interval,
        logger=logger.getChild("loop"),
        on_crash=telemetry.crashed,  # the runner logs the crash; the metric counts it
    )


def _keda_addresses(settings: Settings) -> tuple[str, ...]:
    keda = settings.keda
    return tuple(keda.addresses(settings.cluster.service_namespace)) if keda.enabled else ()


def add_keda(
    service: Service,
    settings: Settings,
    *,
    policy: Policy,
    clock: Clock,
    logger: logging.Logger,
    bind_host: str,
) -> None:
    """KEDA's answers from the service's snapshots, and the gRPC scaler serving them."""
    keda = settings.keda
    service.keda_answers = build_keda_answers(
        settings, policy=policy, store=service.store, clock=clock, logger=logger
    )
    service.servers.append(
        KedaGrpcServer(
            answers=service.keda_answers,
            store=service.store,
            tls=keda.tls,
            heartbeat=keda.heartbeat_interval,
            address=f"{bind_host}:{keda.port}",
            logger=logger.getChild("keda"),
        )
    )


def build_keda_answers(
    settings: Settings,
    *,
    policy: Policy,
    store: SnapshotStore,
    clock: Clock,
    logger: logging.Logger,
) -> KedaAnswers:
    return KedaAnswers(
        latest=store.latest,
        judging=Judging(policy.rules),
        # A trigger may name a rule in `profile:`: it is judged with that rule's view.
        profiles={rule.name for rule in policy.rules[:-1]},
        clock=clock,
        # Older than three cycles: the loop is stuck, and KEDA must hold, not scale to zero.
        max_snapshot_age=max(3 * settings.loop.interval, timedelta(seconds=30)),
        logger=logger.getChild("keda"),
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


def _telemetry(metrics: MetricSource, *, clock: Clock) -> ServiceMetrics:
    """The service's metrics; Prometheus reads also say where their slots came from."""
    telemetry = ServiceMetrics(CollectorRegistry(), clock=clock)
    if isinstance(metrics, PrometheusMetricSource):  # recorded or raw (docs/RECORDING-RULES.md)
        metrics.slots.observer = UsageSourceMetrics(telemetry.registry).observe
    return telemetry
