"""Playing a scenario: the real service, cycle by cycle, on the simulated cluster and clock.

Each cycle: the RayClusters due arrive, Kueue admits what fits, the real `Reconciler` runs
one pass (same policy engine, same snapshot store), and Kueue admits again, so quota freed
by a deactivation goes to the next Workload in the same minute, as Kueue's controller does.
The service is built by the composition root's `build_service`, passed in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Protocol

from autoscaler.core.ports import (
    Clock,
    ClusterReader,
    MetricSource,
    PendingWork,
    StateBacking,
    WorkloadActuator,
)
from autoscaler.demo.people import People
from autoscaler.demo.scenarios import Scenario
from autoscaler.demo.writes import simulated_actuator
from autoscaler.domain.audit.records import AuditRecord
from autoscaler.domain.models import Decision, Snapshot, State, WorkloadRef
from autoscaler.domain.policy.management import SUSPENDED_BY_US
from autoscaler.engine.cycle.reconciler import Reconciler
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.settings.rules import longest_loading
from autoscaler.settings.tree import Settings
from autoscaler.sim.clock import DEFAULT_SPEED, SimulatedClock
from autoscaler.sim.cluster import AuditEntry, SimulatedCluster
from autoscaler.sim.kueue_model import Event, EventKind, Phase
from autoscaler.sim.metrics import ExporterTiming, SimulatedExporter
from autoscaler.sim.pods import GpuPool
from autoscaler.sim.queues import SimulatedQueues


class SharedParts(Protocol):
    """What the demo reads of `autoscaler.compose.loop_parts.SharedState`."""

    @property
    def store(self) -> StateBacking: ...


class ServiceParts(Protocol):
    """What the demo uses of `autoscaler.compose.service.Service`."""

    @property
    def reconciler(self) -> Reconciler: ...

    @property
    def store(self) -> SnapshotStore: ...

    @property
    def shared(self) -> SharedParts: ...  # the runtime state: the audit trail the report reads


class BuildService(Protocol):
    """`autoscaler.compose.service.build_service`."""

    def __call__(
        self,
        settings: Settings,
        *,
        cluster: ClusterReader,
        actuator: WorkloadActuator,
        metrics: MetricSource,
        clock: Clock,
        logger: logging.Logger,
        pending: PendingWork,
    ) -> ServiceParts: ...


Configure = Callable[[Settings], Settings]


@dataclass(frozen=True)
class World:
    """One run of a scenario: the stand-ins and the real service built on them."""

    scenario: Scenario
    settings: Settings
    clock: SimulatedClock
    cluster: SimulatedCluster
    exporter: SimulatedExporter
    service: ServiceParts

    @classmethod
    def build(
        cls,
        scenario: Scenario,
        *,
        dry_run: bool,
        speed: float | None,
        build_service: BuildService,
        logger: logging.Logger,
        configure: Configure | None = None,
    ) -> World:
        settings = scenario.settings(dry_run=dry_run)
        if configure is not None:  # the composition root's ports, tokens, KEDA; never the policy
            settings = configure(settings)
            policy = settings.policy.model_copy(update={"dry_run": dry_run})
            settings = settings.model_copy(update={"policy": policy})
        clock = SimulatedClock(start=scenario.start, speed=speed)
        enabled = settings.actuators.enabled()
        gpus = GpuPool.for_gpus(scenario.gpus)
        cluster = SimulatedCluster(kueue=scenario.kueue, gpus=gpus, clock=clock, enabled=enabled)
        timing = ExporterTiming(
            slot=int(settings.policy.slot.total_seconds()),
            lookback=int(settings.policy.idle_since_lookback.total_seconds()),
            loading=int(longest_loading(settings).total_seconds()),
        )
        exporter = SimulatedExporter(
            holdings=cluster,
            profiles=scenario.profiles(),
            origin=scenario.start,
            timing=timing,
            evidence=settings.prometheus.evidence,
        )
        actuator = simulated_actuator(cluster, clock=clock, enabled=enabled)
        service = build_service(
            settings,
            cluster=cluster,
            actuator=actuator,
            metrics=exporter,
            clock=clock,
            logger=logger,
            pending=SimulatedQueues(read=cluster.kueue),
        )
        return cls(scenario, settings, clock, cluster, exporter, service)


@dataclass(frozen=True)
class Cycle:
    """What one cycle saw and did, for the live view."""

    now: datetime
    minute: int
    snapshot: Snapshot
    notes: tuple[str, ...]  # the scenario's narration due this minute
    before_pass: tuple[Event, ...]  # Kueue's, before the service's pass
    after_pass: tuple[Event, ...]  # Kueue's, after it: what a deactivation let in
    told: tuple[str, ...] = ()  # what the story's people did after the pass, and saw

    @property
    def events(self) -> tuple[Event, ...]:
        """Everything Kueue did this cycle, in order."""
        return self.before_pass + self.after_pass


@dataclass
class Watch:
    """How close a workload came to being stopped, over the whole story."""

    longest_idle: timedelta = timedelta(0)
    unknown_cycles: int = 0
    last_unknown: str = ""
    loading_cycles: int = 0  # judged loading: evidence of use at near-zero compute
    idle_held_gpus: int = 0  # the most GPUs it held idle while others were busy
    warnings: tuple[datetime, ...] = ()  # each warning of a stop, by its warned-at
    snoozes: tuple[tuple[datetime, str], ...] = ()  # each snooze: until, by whom
    not_running: bool = False  # judged not-running once: quota held without work

    def saw(self, decision: Decision, now: datetime) -> None:
        notice = decision.notice
        self.not_running |= decision.state is State.NOT_RUNNING
        if notice.warned_at is not None and notice.warned_at not in self.warnings:
            self.warnings += (notice.warned_at,)
        if notice.snoozed_until is not None:
            snooze = (notice.snoozed_until, notice.snoozed_by or "?")
            self.snoozes += () if snooze in self.snoozes else (snooze,)
        if decision.state is State.IDLE and decision.idle_since is not None:
            self.longest_idle = max(self.longest_idle, now - decision.idle_since)
        if decision.state is State.UNKNOWN:
            self.unknown_cycles += 1
            self.last_unknown = decision.reason
        if decision.state is State.LOADING:
            self.loading_cycles += 1
        if decision.state is State.IDLE_HELD:
            self.idle_held_gpus = max(self.idle_held_gpus, decision.idle_held_gpus)


@dataclass(frozen=True)
class Outcome:
    """How a run ended, for the summary."""

    scenario: Scenario
    dry_run: bool
    ended_at: datetime
    admitted_at: Mapping[str, datetime]  # RayCluster name -> first admission
    audits: tuple[AuditEntry, ...]
    reactivated_at: Mapping[WorkloadRef, datetime]
    final: Snapshot
    waiting: Mapping[str, str]  # RayCluster name -> why it is still pending
    names: Mapping[WorkloadRef, str]  # Workload -> RayCluster name
    watched: Mapping[str, Watch]  # RayCluster name -> how close it came
    events: tuple[Event, ...]  # everything Kueue did, in order
    trail: tuple[AuditRecord, ...] = ()  # the service's audit trail, as the report reads it


OnCycle = Callable[[World, Cycle], None]


def play(world: World, *, on_cycle: OnCycle | None = None, people: People | None = None) -> Outcome:
    """Run the story from its first arrival to its last minute. `people`: the scenario's
    scripted steps and where they find the API (by default none is served: each says so)."""
    scenario = world.scenario
    people = people or People(scenario.people, endpoints=None)
    _before_the_start(world)
    arrivals = sorted((a for a in scenario.arrivals if a.minute >= 0), key=lambda a: a.minute)
    notes = sorted(scenario.notes)
    watched: dict[str, Watch] = {}
    while True:
        now = world.clock.now()
        minute = int((now - scenario.start) / timedelta(minutes=1))
        while arrivals and arrivals[0].minute <= minute:
            world.cluster.create(arrivals.pop(0).spec, now=now)
        due = tuple(text for at, text in notes if minute - 1 < at <= minute)
        cycle = _cycle(world, now=now, minute=minute, notes=due)
        told = people.after(cycle.snapshot, name_of=lambda ref: world.cluster.spec(ref).known_as)
        cycle = replace(cycle, told=told)
        for row in cycle.snapshot.workloads:
            name = world.cluster.spec(row.ref).known_as
            watched.setdefault(name, Watch()).saw(row.decision, now)
        if on_cycle is not None:
            on_cycle(world, cycle)
        if now >= scenario.end:
            return outcome(world, watched)
        world.clock.advance(world.settings.loop.interval)


def keep_serving(
    world: World,
    *,
    wall_seconds: float,
    on_cycle: OnCycle | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Go on cycling after the story, for `wall_seconds`, so a person can try the API."""
    deadline = monotonic() + wall_seconds
    interval = world.settings.loop.interval
    while monotonic() < deadline:
        if world.clock.speed is None:  # max speed would spin: one simulated cycle a second
            sleep(min(interval.total_seconds() / DEFAULT_SPEED, max(0.0, deadline - monotonic())))
        world.clock.advance(interval)
        now = world.clock.now()
        minute = int((now - world.scenario.start) / timedelta(minutes=1))
        cycle = _cycle(world, now=now, minute=minute, notes=())
        if on_cycle is not None:
            on_cycle(world, cycle)


def outcome(world: World, watched: Mapping[str, Watch]) -> Outcome:
    cluster = world.cluster
    kueue = cluster.kueue()
    final = world.service.store.latest()
    if final is None:
        raise RuntimeError("the story ended before its first cycle")
    own = {  # a suspended-by-us row is the RayCluster itself: its ref names it
        row.ref: row.ref.name for row in final.workloads if row.info.manager in SUSPENDED_BY_US
    }
    # Every Workload's owner: those there now, and those gone (a requeue's old one)
    seen = {*kueue.workloads, *(event.workload for event in cluster.events)}
    names = {ref: cluster.spec(ref).known_as for ref in seen} | own
    admitted: dict[str, datetime] = {}
    for event in cluster.events:
        if event.kind is EventKind.ADMITTED:
            admitted.setdefault(names[event.workload], event.at)
    requeued = {ref: w.requeued_at for ref, w in kueue.workloads.items() if w.requeued_at}
    reactivated = requeued | cluster.rayclusters.resumed()
    waiting = {
        names[w.ref]: cluster.waiting_reason(w.ref) or "pending"
        for w in kueue.in_phase(Phase.PENDING)
    }
    return Outcome(
        scenario=world.scenario,
        dry_run=world.settings.policy.dry_run,
        ended_at=world.clock.now(),
        admitted_at=admitted,
        audits=tuple(cluster.audits),
        reactivated_at=reactivated,
        final=final,
        waiting=waiting,
        names=names,
        watched=dict(watched),
        events=tuple(cluster.events),
        trail=world.service.shared.store.read().audit,
    )


def _before_the_start(world: World) -> None:
    """RayClusters applied before minute 0 arrive and are admitted at their own times."""
    for arrival in sorted(world.scenario.arrivals, key=lambda a: a.minute):
        if arrival.minute < 0:
            at = world.scenario.start + timedelta(minutes=arrival.minute)
            world.cluster.create(arrival.spec, now=at)
            world.cluster.step(now=at)


def _cycle(world: World, *, now: datetime, minute: int, notes: tuple[str, ...]) -> Cycle:
    before = world.cluster.step(now=now)
    snapshot = world.service.reconciler.run_once()
    after = world.cluster.step(now=now)  # quota a deactivation freed goes to the next one
    return Cycle(now, minute, snapshot, notes, before, after)
