"""A guarded reconcile loop over fakes, driven cycle by cycle with a fleet whose GPUs a test
turns busy, idle or silent.

    fleet = GuardedFleet.of(busy=10, idle=2)
    fleet.cycle()                 # one pass at the clock's time, then a minute passes
    fleet.set("busy-3", IDLE_NOW) # its GPU stops working from this cycle on
    fleet.restart()               # a new Reconciler and screen; the durable fakes remain
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from autoscaler.domain.guards.breaker import BreakerRules
from autoscaler.domain.guards.screen import ContestedRules, GuardRules
from autoscaler.domain.models import Snapshot, WorkloadRef
from autoscaler.engine.cycle.snapshots import SnapshotStore
from tests.support.domain_builders import NOW, UsageBuilder, a_policy, a_workload, usage
from tests.support.fakes import FakeAuditLog, FakeClock, FakeCluster, FakeGuardState, FakeMetrics
from tests.support.loop_builders import INTERVAL, a_loop, a_screen

NAMESPACE = "team-a"
RULES = GuardRules(
    max_per_hour=20,
    breaker=BreakerRules(min_workloads=3, share=0.2, close_after=3),
    contested=ContestedRules(
        undone_within=timedelta(minutes=10), times=3, span=timedelta(hours=24)
    ),
)


class Gpu(enum.Enum):
    BUSY = "busy"  # working right now
    IDLE_LONG = "idle-long"  # idle for hours: a candidate
    IDLE_NOW = "idle-now"  # stopped just before the next cycle (busy earlier in the window)
    SILENT = "silent"  # its series vanished: unknown


def ref(name: str) -> WorkloadRef:
    return WorkloadRef(NAMESPACE, name)


@dataclass
class GuardedFleet:
    gpus: dict[str, Gpu]
    rules: GuardRules = RULES
    cap: int = 5
    dry_run: bool = False
    clock: FakeClock = field(default_factory=lambda: FakeClock(NOW))
    stopped_at: dict[str, datetime] = field(default_factory=dict)
    store: SnapshotStore = field(default_factory=SnapshotStore)
    leads: bool = True

    def __post_init__(self) -> None:
        self.cluster = FakeCluster(
            [a_workload(NAMESPACE, name).gpu_pod(f"{name}-w").build() for name in self.gpus]
        )
        self.metrics = FakeMetrics(self.usage_at(self.clock.now()))
        self.audit = FakeAuditLog(journal=self.cluster.calls)
        self.state = FakeGuardState(audit=self.audit)
        self.restart()

    @classmethod
    def of(cls, *, busy: int = 0, idle: int = 0, **options: object) -> GuardedFleet:
        gpus = {f"busy-{i}": Gpu.BUSY for i in range(busy)}
        gpus |= {f"idle-{i}": Gpu.IDLE_LONG for i in range(idle)}
        return cls(gpus, **options)  # type: ignore[arg-type]

    def restart(self) -> None:
        policy = a_policy(cap=self.cap, dry_run=self.dry_run)
        screen = a_screen(
            metrics=self.metrics,
            policy=policy,
            audit=self.audit,
            state=self.state,
            rules=self.rules,
            logger=logging.getLogger("test.guards"),
        )
        self.reconciler = a_loop(
            self.cluster,
            self.metrics,
            actuator=self.cluster,
            policy=policy,
            clock=self.clock,
            publish=self.store.publish,
            logger=logging.getLogger("test.decisions"),
            audit=self.audit,
            screen=screen,
            leads=lambda: self.leads,
        )

    def add(self, name: str, gpu: Gpu) -> None:
        """A new workload, seen from the next cycle on."""
        self.cluster.workloads.append(a_workload(NAMESPACE, name).gpu_pod(f"{name}-w").build())
        self.set(name, gpu)

    def set(self, name: str, gpu: Gpu) -> None:
        self.gpus[name] = gpu
        if gpu is Gpu.IDLE_NOW:  # two slots ago: idle (not busy) from the next cycle on
            self.stopped_at[name] = self.clock.now() - timedelta(minutes=2)

    def usage_at(self, now: datetime) -> UsageBuilder:
        fleet = usage()
        for name, gpu in self.gpus.items():
            pod = f"{name}-w"
            if gpu is Gpu.BUSY:
                fleet.gpu(NAMESPACE, pod, peak=0.9, last_sample=now, last_busy=now)
            elif gpu is Gpu.IDLE_LONG:
                fleet.gpu(NAMESPACE, pod, peak=0.01, last_sample=now, last_busy=None)
            elif gpu is Gpu.IDLE_NOW:
                stopped = self.stopped_at.get(name, now)
                fleet.gpu(NAMESPACE, pod, peak=0.9, last_sample=now, last_busy=stopped)
        return fleet

    def cycle(self) -> Snapshot:
        now = self.clock.now()
        self.metrics.usage = self.usage_at(now).build(evaluated_at=now)
        snapshot = self.reconciler.run_once()
        self.clock.advance(INTERVAL)
        return snapshot

    def reactivate(self, name: str) -> None:
        """Someone else sets the Workload back to active (a GitOps tool, a user)."""
        self.cluster.workloads = [
            replace(w, active=True) if w.ref == ref(name) else w for w in self.cluster.workloads
        ]

    def deactivated(self) -> list[WorkloadRef]:
        return self.cluster.deactivated()
