"""The reconcile loop built as the composition root builds it, over fakes of the ports: one
act context (`engine/acting/context.py`) and the cycle's screen, whose guard state and audit
trail are `FakeGuardState` and `FakeAuditLog` unless a test brings its own.

    loop = a_loop(cluster, metrics, actuator=cluster, policy=a_policy(), clock=FakeClock(NOW))

`a_service` builds the whole service instead, from settings, by the composition root itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import timedelta

from autoscaler.compose.loop_parts import SharedState
from autoscaler.compose.service import Service, build_service
from autoscaler.core.ports import (
    AuditLog,
    Clock,
    ClusterReader,
    GuardState,
    KueueFeatures,
    MetricSource,
    PendingWork,
    WorkloadActuator,
)
from autoscaler.domain.guards.screen import GuardRules
from autoscaler.domain.models import Snapshot
from autoscaler.domain.policy.decisions import Policy
from autoscaler.engine.acting.context import ActContext, Leads, always_leads
from autoscaler.engine.cycle.fleet_watch import FleetWatch
from autoscaler.engine.cycle.reconciler import Reconciler
from autoscaler.engine.cycle.screen import Screen
from autoscaler.engine.notify.notices import EVENTS_ONLY, NoticeTeller
from autoscaler.settings.tree import Settings
from tests.support.fakes import FakeAuditLog, FakeCluster, FakeGuardState, FakeRuntimeState

INTERVAL = timedelta(minutes=1)  # the loop's, as the breaker's baseline reads it back
LOG = logging.getLogger("test.loop")


def in_memory_shared(actuator: WorkloadActuator) -> SharedState:
    """What a service built by `build_service` writes to: the runtime state in memory
    (`FakeRuntimeState`) and `actuator`."""
    return SharedState(store=FakeRuntimeState(), actuator=actuator)


def a_service(
    settings: Settings,
    *,
    cluster: FakeCluster,
    metrics: MetricSource,
    clock: Clock,
    pending: PendingWork | None = None,
    logger: logging.Logger = LOG,
    features: KueueFeatures | None = None,
) -> Service:
    """The service as `serve` builds it (`build_service`: the policy, the screen, the act
    context and the listeners, all from `settings`) over `cluster` as reader and actuator, its
    runtime state in memory and journaling each audit record into `cluster.calls`. Not
    started: a test runs `service.reconciler.run_once()` at the times it chooses."""
    shared = SharedState(store=FakeRuntimeState(journal=cluster.calls), actuator=cluster)
    return build_service(
        settings,
        cluster=cluster,
        metrics=metrics,
        clock=clock,
        logger=logger,
        shared=shared,
        pending=pending,
        features=features,
    )


def a_screen(
    *,
    metrics: MetricSource,
    policy: Policy,
    audit: AuditLog,
    state: GuardState | None = None,
    rules: GuardRules | None = None,
    logger: logging.Logger = LOG,
) -> Screen:
    """The shipped guard rules unless given; a fresh `FakeGuardState` over `audit` unless
    given. `metrics` answers the breaker's baseline read after a start."""
    if state is None:
        assert isinstance(audit, FakeAuditLog), "a FakeGuardState records into a FakeAuditLog"
        state = FakeGuardState(audit=audit)
    watch = FleetWatch(policy=policy, metrics=metrics, interval=INTERVAL, logger=logger)
    return Screen(rules=rules or GuardRules(), audit=audit, state=state, watch=watch, logger=logger)


def a_loop(
    cluster: ClusterReader,
    metrics: MetricSource,
    *,
    policy: Policy,
    clock: Clock,
    actuator: WorkloadActuator,
    publish: Callable[[Snapshot], None] = lambda _snapshot: None,
    logger: logging.Logger = LOG,
    audit: AuditLog | None = None,
    screen: Screen | None = None,
    teller: NoticeTeller = EVENTS_ONLY,
    leads: Leads = always_leads,
    pending: PendingWork | None = None,
    keda_addresses: Sequence[str] = (),
) -> Reconciler:
    """The loop over `cluster`, `actuator` and `metrics`; the audit trail a fresh
    `FakeAuditLog` and the screen `a_screen` over it, unless given."""
    audit = FakeAuditLog() if audit is None else audit
    context = ActContext(
        cluster=cluster,
        actuator=actuator,
        metrics=metrics,
        audit=audit,
        policy=policy,
        clock=clock,
        logger=logger,
        teller=teller,
        leads=leads,
    )
    return Reconciler(
        context=context,
        screen=screen or a_screen(metrics=metrics, policy=policy, audit=audit, logger=logger),
        publish=publish,
        pending=pending,
        keda_addresses=keda_addresses,
    )
