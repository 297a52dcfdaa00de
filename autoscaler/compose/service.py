"""One process's running parts: the loop, its snapshot store and the servers beside it, built
the same way for serve and the demo.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from autoscaler.core.ports import (
    Clock,
    ClusterReader,
    GuardStore,
    MetricSource,
    Server,
    WorkloadActuator,
)
from autoscaler.domain.policy import Policy
from autoscaler.engine.guarding import Guards
from autoscaler.engine.reconciler import Reconciler
from autoscaler.engine.scheduler import LoopRunner
from autoscaler.engine.snapshots import SnapshotStore
from autoscaler.keda.answers import KedaAnswers
from autoscaler.keda.server import KedaGrpcServer
from autoscaler.keda.targets import Judging
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings


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
    cluster: ClusterReader,
    actuator: WorkloadActuator,
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
        actuator=actuator,
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


@dataclass
class StopOnly:
    """A part that starts by itself (watch caches fill on the first cycle) but must be
    stopped with the service."""

    stop_part: Callable[[], object]

    def start(self) -> None:
        return None

    def stop(self) -> None:
        self.stop_part()
