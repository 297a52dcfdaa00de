"""The parts beside the reconcile loop, built once per process by the composition root: the
guards, the service's metrics and the snapshot listeners (loop audit, exemption and
snooze limits, action counts).

Every replica builds them all. Only the leader writes: the guards are told `leading` each
cycle, and the listeners ask `is_leader` before each write; a follower computes the same
view and serves it (REST, KEDA, /metrics) without a single write request.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from autoscaler.adapters.state.guards import RuntimeGuardStore
from autoscaler.core.ports import (
    Clock,
    GuardStore,
    MetricSource,
    StateBacking,
    WorkloadActuator,
)
from autoscaler.domain.policy.decisions import Policy
from autoscaler.engine.acting.leadership import IsLeader, always_leading
from autoscaler.engine.cycle.screen import Guards
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.engine.listeners.follow_ups import FollowUps
from autoscaler.engine.listeners.limits import ExemptionLimiter, SnoozeLimiter
from autoscaler.engine.listeners.loop_audit import LoopAuditor
from autoscaler.engine.metrics.actions import ActionCounter
from autoscaler.engine.metrics.savings import SavingsGauges
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

    def guard_store(self, *, audit_limit: int, clock: Clock) -> GuardStore:
        if self.guards is not None:
            return self.guards
        return RuntimeGuardStore(store=self.store, audit_limit=audit_limit, clock=clock)


def build_guards(
    settings: Settings,
    *,
    policy: Policy,
    shared: SharedState,
    metrics: MetricSource,
    clock: Clock,
    logger: logging.Logger,
) -> Guards:
    store = shared.guard_store(audit_limit=settings.api.audit_record_limit, clock=clock)
    return Guards(
        rules=settings.guards.rules(max_per_hour=settings.policy.max_deactivations_per_hour),
        policy=policy,
        audit=store,
        state=store,
        metrics=metrics,
        interval=settings.loop.interval,
        logger=logger.getChild("guards"),
    )


def subscribe_listeners(
    store: SnapshotStore,
    *,
    settings: ApiSettings,
    telemetry: ServiceMetrics,
    shared: SharedState | None,
    clock: Clock,
    logger: logging.Logger,
    is_leader: IsLeader = always_leading,
) -> None:
    """Metrics from every snapshot; with `shared`, the leader's loop audit and the bounds on
    hand-set exemptions and snoozes (each row's rule, as its decision carries it)."""
    store.subscribe(telemetry.observe)
    store.subscribe(ActionCounter(telemetry.registry).observe)
    if shared is None:
        return  # nowhere to write (unit tests of the loop alone)
    store.subscribe(
        LoopAuditor(
            audit=shared.store,
            metrics=telemetry,
            logger=logger.getChild("audit"),
            leading=is_leader,
        )
    )
    store.subscribe(
        SavingsGauges(telemetry.registry, state=shared.store, logger=logger.getChild("savings"))
    )
    store.subscribe(
        FollowUps(state=shared.store, logger=logger.getChild("follow-ups"), leading=is_leader)
    )
    store.subscribe(
        ExemptionLimiter(
            writer=shared.actuator,
            audit=shared.store,
            clock=clock,
            allow_indefinite=settings.allow_indefinite_exemption,
            logger=logger.getChild("exemptions"),
            leading=is_leader,
        )
    )
    store.subscribe(snooze_limiter(shared, clock=clock, logger=logger, is_leader=is_leader))


def snooze_limiter(
    shared: SharedState,
    *,
    clock: Clock,
    logger: logging.Logger,
    is_leader: IsLeader,
) -> SnoozeLimiter:
    """Hand-set snoozes bounded by each workload's rule, after every cycle (ISSUE 15)."""
    return SnoozeLimiter(
        writer=shared.actuator,
        audit=shared.store,
        clock=clock,
        logger=logger.getChild("snoozes"),
        leading=is_leader,
    )
