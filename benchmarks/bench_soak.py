"""Soak: the real service for hours of simulated time against 1,000 workloads, with faults
injected at random into every port it uses.

    python -m benchmarks.bench_soak                     # 1,000 workloads, 240 simulated minutes
    python -m benchmarks.bench_soak --minutes 30 --workloads 200 --seed 7    # a quick look

The service is `autoscaler.compose.service.build_service` with the real policy and the guards (their
state in memory, as the demo keeps it), on the demo's simulated cluster, exporter and clock
(no real sleeping), each wrapped in fault injection (benchmarks/soak_faults.py). The fleet
and its ground truth are in benchmarks/soak_fleet.py and benchmarks/soak_truth.py. A GitOps
tool sets every "undone" workload back to active one cycle after each deactivation.

It reports actions taken, wrongful actions (judged on the truth, must be 0), missed idle
workloads (due for more than `--tolerance` minutes by the end and still active), the delay
from falling due to being deactivated, cycle time p50/p99 and peak memory (max RSS of the
process, simulation included). Exits 1 when an action was wrongful.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import resource
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from autoscaler.adapters.state.guards import RuntimeGuardStore
from autoscaler.compose.loop_parts import SharedState
from autoscaler.compose.service import Service, build_service
from autoscaler.domain.models import Snapshot, UsageView, WorkloadRef
from autoscaler.settings.tree import Settings
from autoscaler.sim.actuators import SimulatedActuator
from autoscaler.sim.clock import SimulatedClock
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.kueue_model import EventKind, Phase
from autoscaler.sim.metrics import ExporterTiming, SimulatedExporter
from autoscaler.sim.pods import GpuPool
from autoscaler.sim.state import SimulatedRuntimeState
from benchmarks.soak_faults import (
    Dice,
    FaultyActuator,
    FaultyCluster,
    FaultyGuardStore,
    FaultyMetrics,
)
from benchmarks.soak_fleet import PROTECTED_CLASS, START, Fleet, Member, build_fleet
from benchmarks.soak_truth import Rules, due_at, wrongful

CYCLE = timedelta(minutes=1)


def soak_settings(*, per_cycle: int = 25) -> Settings:
    """The product's defaults (60-minute window, 5 %, 15-minute grace, 1-minute slot, the
    breaker and contested rules), acting, with caps sized for a 1,000-workload fleet, and
    the fleet's production priority class protected."""
    return Settings.model_validate(
        {
            "policy": {
                "dryRun": False,
                "maxDeactivationsPerCycle": per_cycle,
                "maxDeactivationsPerHour": 300,
                "protectedPriorityClasses": [PROTECTED_CLASS],
            },
            "api": {"auditRecordLimit": 1000},
            "loop": {"interval": "1m"},
        }
    )


@dataclass
class GuardTally:
    """What the guards did over the run, cycle by cycle."""

    breaker_trips: int = 0
    open_now: bool = False
    cycles_breaker_open: int = 0
    deferred_decisions: int = 0
    contested_at_end: int = 0

    def saw(self, snapshot: Snapshot) -> None:
        report = snapshot.guards
        if report is None:
            return
        opened = report.breaker.open
        self.breaker_trips += int(opened and not self.open_now)
        self.cycles_breaker_open += int(opened)
        self.open_now = opened
        self.deferred_decisions += report.deferred
        self.contested_at_end = len(report.contested)


@dataclass
class World:
    fleet: Fleet
    clock: SimulatedClock
    cluster: SimulatedCluster
    service: Service
    dice: Dice
    metrics: FaultyMetrics
    deactivated: list[tuple[WorkloadRef, datetime]] = field(default_factory=list)
    cycle_seconds: list[float] = field(default_factory=list)
    service_seconds: list[float] = field(default_factory=list)  # without the sim's answers
    last: Snapshot | None = None  # only the latest: the service itself keeps no more
    guards: GuardTally = field(default_factory=GuardTally)
    outcomes: Counter[str] = field(default_factory=Counter)  # done, skipped, failed, ...
    undone: int = 0


def build_world(fleet: Fleet, settings: Settings, *, seed: int) -> World:
    clock = SimulatedClock(start=START, speed=None)
    cluster = SimulatedCluster(kueue=fleet.kueue, gpus=GpuPool.for_gpus(fleet.gpus), clock=clock)
    cluster.pauses = fleet.pauses
    policy = settings.policy
    timing = ExporterTiming(
        slot=int(policy.slot.total_seconds()),
        lookback=int(policy.idle_since_lookback.total_seconds()),
    )
    exporter = SimulatedExporter(
        holdings=cluster, profiles=fleet.telemetry(), origin=START, timing=timing
    )
    dice = Dice(random.Random(seed))
    deactivated: list[tuple[WorkloadRef, datetime]] = []
    limit = settings.api.audit_record_limit
    state = SimulatedRuntimeState(cluster=cluster, audit_limit=limit)
    metrics = FaultyMetrics(exporter, dice=dice)
    actuator = FaultyActuator(
        SimulatedActuator(cluster=cluster, clock=clock),
        dice=dice,
        now=clock.now,
        on_deactivated=lambda r, t: deactivated.append((r, t)),
    )
    service = build_service(
        settings,
        cluster=FaultyCluster(cluster, dice=dice),
        metrics=metrics,
        clock=clock,
        logger=_quiet_logger(),
        shared=SharedState(
            store=state,
            actuator=actuator,
            guards=FaultyGuardStore(
                RuntimeGuardStore(store=state, audit_limit=limit, clock=clock), dice=dice
            ),
        ),
    )
    return World(fleet, clock, cluster, service, dice, metrics, deactivated)


def play(world: World, *, minutes: int) -> None:
    arrivals = sorted(world.fleet.members, key=lambda m: m.arrives)
    early = [m for m in arrivals if m.arrives < 0]
    later = [m for m in arrivals if m.arrives >= 0]
    for member in early:  # applied before the run, admitted at their own times
        at = START + timedelta(minutes=member.arrives)
        world.cluster.create(member.spec, now=at)
        world.cluster.step(now=at)
    for _ in range(minutes + 1):
        now = world.clock.now()
        while later and START + timedelta(minutes=later[0].arrives) <= now:
            world.cluster.create(later.pop(0).spec, now=now)
        _undo_gitops(world, now)
        world.cluster.step(now=now)
        began, answering = time.perf_counter(), world.metrics.seconds
        world.last = snapshot = world.service.reconciler.run_once()
        took = time.perf_counter() - began
        world.cycle_seconds.append(took)
        world.service_seconds.append(took - (world.metrics.seconds - answering))
        world.guards.saw(snapshot)
        world.outcomes.update(a.outcome.kind.value for a in snapshot.actions)
        world.cluster.step(now=now)
        world.clock.advance(CYCLE)


def play_without_service(world: World, settings: Settings, *, minutes: int) -> None:
    """The same run with the service replaced by one plain read of the simulated exporter."""
    exporter, rules = world.metrics.inner, settings.policy

    @dataclass
    class ReadOnly:
        def run_once(self) -> Snapshot:
            now = world.clock.now()
            exporter.read_views([UsageView(rules.idle_window, 0.05)], now=now)
            return Snapshot(cycle=0, taken_at=now, workloads=(), cluster_ok=True,
                            metrics_ok=True, dry_run=True)  # fmt: skip

    world.service.reconciler = ReadOnly()  # type: ignore[assignment]
    play(world, minutes=minutes)


def _undo_gitops(world: World, now: datetime) -> None:
    """A GitOps tool heals the "undone" ones: spec.active back to true."""
    kueue = world.cluster.kueue()
    names = {w.ref: world.cluster.spec(w.ref).name for w in kueue.in_phase(Phase.INACTIVE)}
    for ref, name in names.items():
        if name.startswith("undone-"):
            world.cluster.set_active(ref, active=True, now=now)
            world.undone += 1


def judge(world: World, settings: Settings, *, tolerance: timedelta) -> dict[str, Any]:
    rules = Rules(
        window=settings.policy.idle_window,
        grace=settings.policy.grace_period,
        threshold_pct=settings.policy.threshold_percent,
    )
    members = _members_by_ref(world)
    admissions = _admissions(world)
    wrong, delays = [], []
    for ref, at in world.deactivated:
        member, admitted = members[ref], _latest(admissions[ref], at)
        why = wrongful(member, at=at, admitted=admitted, rules=rules)
        if why is not None:
            wrong.append(f"{ref} at {at:%H:%M}: {why}")
            continue
        due = due_at(member, admitted=admitted, until=at, rules=rules)
        if due is not None:  # from when it fell due, or the service started if later
            delays.append(((at - max(due, START)) / timedelta(minutes=1), f"{ref} at {at:%H:%M}"))
    return {
        "wrongful": wrong,
        "missed": _missed(world, members, admissions, rules=rules, tolerance=tolerance),
        "delay_minutes": delays,
    }


def _missed(
    world: World,
    members: dict[WorkloadRef, Member],
    admissions: dict[WorkloadRef, list[datetime]],
    *,
    rules: Rules,
    tolerance: timedelta,
) -> list[str]:
    """Due for longer than `tolerance` at the end and still active; a workload the guards
    marked contested is left alone by design, and not counted."""
    end = world.clock.now() - CYCLE
    last = world.last
    assert last is not None, "no cycle ran"
    contested = set(last.guards.contested) if last.guards else set()
    missed = []
    for workload in world.cluster.kueue().in_phase(Phase.ADMITTED):
        ref = workload.ref
        admitted = _latest(admissions[ref], end)
        due = due_at(members[ref], admitted=admitted, until=end - tolerance, rules=rules)
        if due is not None and ref not in contested:
            row = last.find(ref)
            seen = f"{row.decision.state.value}: {row.decision.reason}" if row else "not seen"
            missed.append(f"{ref} due {due:%H:%M}; last seen {seen}")
    return missed


def _members_by_ref(world: World) -> dict[WorkloadRef, Member]:
    by_key = world.fleet.by_key()
    kueue = world.cluster.kueue()
    return {ref: by_key[(ref.namespace, world.cluster.spec(ref).name)] for ref in kueue.workloads}


def _admissions(world: World) -> dict[WorkloadRef, list[datetime]]:
    found: dict[WorkloadRef, list[datetime]] = {}
    for event in world.cluster.events:
        if event.kind is EventKind.ADMITTED:
            found.setdefault(event.workload, []).append(event.at)
    return found


def _latest(times: list[datetime], at: datetime) -> datetime:
    return max(t for t in times if t <= at)


def report(world: World, verdict: dict[str, Any], *, minutes: int, wall: float) -> dict[str, Any]:
    cycles = sorted(world.cycle_seconds)
    waits = sorted(verdict["delay_minutes"])
    delays = [minutes for minutes, _ in waits]
    return {
        "workloads": len(world.fleet.members),
        "gpus": world.fleet.gpus,
        "simulated_minutes": minutes,
        "wall_seconds": round(wall, 1),
        "actions_taken": len(world.deactivated),
        "action_attempts": dict(world.outcomes),
        "wrongful_actions": len(verdict["wrongful"]),
        "wrongful": verdict["wrongful"][:20],
        "missed_idle_workloads": len(verdict["missed"]),
        "missed_by_last_reason": dict(Counter(_last_clause(m) for m in verdict["missed"])),
        "missed": verdict["missed"][:10],
        "undone_by_gitops": world.undone,
        "delay_after_due_minutes": _spread(delays),
        "longest_waits": [f"{minutes:g} min: {what}" for minutes, what in waits[-5:]],
        "cycle_seconds": _spread(cycles, digits=3),
        "cycle_seconds_without_the_simulated_prometheus": _spread(
            sorted(world.service_seconds), digits=3
        ),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "guards": {
            "breaker_trips": world.guards.breaker_trips,
            "cycles_breaker_open": world.guards.cycles_breaker_open,
            "deferred_decisions": world.guards.deferred_decisions,
            "contested_at_end": world.guards.contested_at_end,
        },
        "faults_injected": dict(sorted(world.dice.injected.items())),
        "kinds": dict(Counter(m.kind for m in world.fleet.members)),
    }


def _last_clause(missed: str) -> str:
    """What last held a missed workload back: the final clause of its last decision."""
    return missed.rsplit("; ", 1)[-1][:100]


def _spread(values: list[float], *, digits: int = 1) -> dict[str, float]:
    """p50, p99 and max of sorted `values`."""
    if not values:
        return {}
    return {
        "p50": round(statistics.median(values), digits),
        "p99": round(values[int(0.99 * (len(values) - 1))], digits),
        "max": round(values[-1], digits),
    }


def _quiet_logger() -> logging.Logger:
    logger = logging.getLogger("soak")
    logger.propagate = False
    logger.addHandler(logging.NullHandler())
    return logger


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--minutes", type=int, default=240, help="simulated minutes")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tolerance", type=int, default=15, help="minutes; see `missed`")
    parser.add_argument("--per-cycle-cap", type=int, default=25, help="deactivations per cycle")
    parser.add_argument(
        "--simulation-only",
        action="store_true",
        help="no service: one read of the simulated exporter per cycle, for the memory the "
        "simulation alone takes (the baseline of peak_rss_mib)",
    )
    args = parser.parse_args(argv)
    settings = soak_settings(per_cycle=args.per_cycle_cap)
    fleet = build_fleet(size=args.workloads, minutes=args.minutes, seed=args.seed)
    world = build_world(fleet, settings, seed=args.seed)
    began = time.perf_counter()
    if args.simulation_only:
        play_without_service(world, settings, minutes=args.minutes)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps({"simulation_only_peak_rss_mib": round(rss, 1)}))
        return 0
    play(world, minutes=args.minutes)
    wall = time.perf_counter() - began
    verdict = judge(world, settings, tolerance=timedelta(minutes=args.tolerance))
    figures = report(world, verdict, minutes=args.minutes, wall=wall)
    print(json.dumps(figures, indent=2))
    return 1 if verdict["wrongful"] else 0


if __name__ == "__main__":
    sys.exit(main())
