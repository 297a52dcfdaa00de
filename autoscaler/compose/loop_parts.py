"""The parts beside the reconcile loop, built once per process by the composition root: the
runtime state every replica shares, the cycle's screen, the service's metrics and the
snapshot listeners (loop audit, exemption and snooze limits, action counts).

Every replica builds them all. Only the leader writes: the screen is told `leads` each
cycle, and the act steps and the listeners ask `leads` before each write; a follower
computes the same view and serves it (REST, KEDA, /metrics) without a single write request.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from autoscaler.adapters.state.guards import RuntimeGuardStore
from autoscaler.core.ports import (
    Clock,
    GuardStore,
    MetricSource,
    StateBacking,
    WorkloadActuator,
)
from autoscaler.domain.policy.decisions import Policy
from autoscaler.engine.acting.context import Leads, always_leads
from autoscaler.engine.cycle.fleet_watch import FleetWatch
from autoscaler.engine.cycle.screen import Screen
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.engine.listeners.follow_ups import FollowUps
from autoscaler.engine.listeners.limits import ExemptionLimiter, SnoozeLimiter
from autoscaler.engine.listeners.loop_audit import LoopAuditor
from autoscaler.engine.metrics.actions import ActionCounter
from autoscaler.engine.metrics.savings import REFRESH, SavingsGauges
from autoscaler.engine.metrics.telemetry import ServiceMetrics
from autoscaler.settings.api import ApiSettings
from autoscaler.settings.tree import Settings


@dataclass(frozen=True)
class SharedState:
    """What every replica shares and the API changes too: the runtime state (the ConfigMap in
    `serve`, memory in the demo) and the actuator (the loop's deactivations, the exemption
    limit's cuts, the API's exemptions and reactivations)."""

    store: StateBacking
    actuator: WorkloadActuator
    guards: GuardStore | None = None  # the guards' view of `store` unless given (soak faults)
    # How often the savings gauges read the trail: each cycle where `store` is in memory (the
    # demo), so /metrics shows the figures the report and the summary show at the same time.
    savings_refresh: timedelta = REFRESH

    def guard_store(self, *, audit_limit: int, clock: Clock) -> GuardStore:
        if self.guards is not None:
            return self.guards
        return RuntimeGuardStore(store=self.store, audit_limit=audit_limit, clock=clock)


def build_screen(
    settings: Settings,
    *,
    store: GuardStore,
    policy: Policy,
    metrics: MetricSource,
    logger: logging.Logger,
) -> Screen:
    """The cycle's screen over the guards' store: its breaker compares each cycle with the
    busy workloads of the last (read from Prometheus history after a start)."""
    log = logger.getChild("guards")
    watch = FleetWatch(policy=policy, metrics=metrics, interval=settings.loop.interval, logger=log)
    return Screen(
        rules=settings.guards.rules(max_per_hour=settings.policy.max_deactivations_per_hour),
        audit=store,
        state=store,
        watch=watch,
        logger=log,
    )


def subscribe_listeners(
    store: SnapshotStore,
    *,
    settings: ApiSettings,
    telemetry: ServiceMetrics,
    shared: SharedState,
    clock: Clock,
    logger: logging.Logger,
    leads: Leads = always_leads,
) -> None:
    """Metrics from every snapshot; with `shared`, the leader's loop audit and the bounds on
    hand-set exemptions and snoozes (each row's rule, as its decision carries it)."""
    store.subscribe(telemetry.observe)
    store.subscribe(ActionCounter(telemetry.registry).observe)
    store.subscribe(
        LoopAuditor(
            audit=shared.store,
            metrics=telemetry,
            logger=logger.getChild("audit"),
            leads=leads,
        )
    )
    store.subscribe(
        FollowUps(state=shared.store, logger=logger.getChild("follow-ups"), leads=leads)
    )
    store.subscribe(  # after the follow-ups: this cycle's notes count in this cycle's figures
        SavingsGauges(
            telemetry.registry,
            state=shared.store,
            logger=logger.getChild("savings"),
            refresh=shared.savings_refresh,
        )
    )
    store.subscribe(
        ExemptionLimiter(
            writer=shared.actuator,
            audit=shared.store,
            clock=clock,
            allow_indefinite=settings.allow_indefinite_exemption,
            logger=logger.getChild("exemptions"),
            leads=leads,
        )
    )
    store.subscribe(snooze_limiter(shared, clock=clock, logger=logger, leads=leads))


def snooze_limiter(
    shared: SharedState,
    *,
    clock: Clock,
    logger: logging.Logger,
    leads: Leads,
) -> SnoozeLimiter:
    """Hand-set snoozes bounded by each workload's rule, after every cycle (ISSUE 15)."""
    return SnoozeLimiter(
        writer=shared.actuator,
        audit=shared.store,
        clock=clock,
        logger=logger.getChild("snoozes"),
        leads=leads,
    )
