"""Decisions as the classifier leaves them (ISSUE 16), for the surfaces' tests: a class, its
evidence lines and, for idle-held work, how many GPUs sat idle.

    a_decision("team-a", "rc").idle_held(2, of=4).seen("framebuffer rose 18.0 GiB").build()

The evidence lines follow the shapes the readers write (`Sighting.detail`, Ray's notes); the
surfaces only show them, so any line will do, as long as each table says which case it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Self

from autoscaler.domain.models import (
    Action,
    Decision,
    Pauses,
    State,
    WorkloadInfo,
    WorkloadRef,
    WorkloadStatus,
)
from autoscaler.domain.policy.decisions import Policy, Usage, apply_cap, decide
from autoscaler.domain.usage.assessment import Assessment
from tests.support.domain_builders import A_DEFAULT_RULE, NOW, a_workload

# Evidence lines in the readers' words, one per case the issue asks the surfaces to show.
FB_CLIMBING = "framebuffer rose 18.0 GiB in 20 min at 0-2% compute"
DRIVER_ATTACHED = "ray: driver attached (shown, not use)"
NEIGHBOUR_LOADS = "framebuffer of MIG 1g.10gb instance 2 rose 9.5 GiB (a neighbour's, not its)"


@dataclass
class DecisionBuilder:
    namespace: str
    name: str
    state: State = State.BUSY
    action: Action = Action.NONE
    reason: str = "peak utilization 85% within the window"
    gpus: int = 1
    evidence: list[str] = field(default_factory=list)
    idle_held_gpus: int = 0
    unmonitored: bool = False

    def not_running(
        self, reason: str = "not running for 45m, past 30m: pod w-0: image x cannot be pulled"
    ) -> Self:
        self.state, self.reason = State.NOT_RUNNING, reason
        return self

    def running_unmonitored(self) -> Self:
        """Its GPU pods run, the metrics miss them: unknown, flagged as a monitoring gap."""
        self.state, self.unmonitored = State.UNKNOWN, True
        self.reason = "running but not monitored: pod w-0 has 0 GPU series for 1 requested GPUs"
        return self

    def loading(self, reason: str = "loading for 20 min at near-zero compute") -> Self:
        self.state, self.reason = State.LOADING, reason
        return self

    def idle_held(self, idle: int, *, of: int) -> Self:
        self.state, self.gpus, self.idle_held_gpus = State.IDLE_HELD, of, idle
        self.reason = f"{of - idle} of {of} GPUs busy, {idle} idle for the whole window"
        return self

    def idle(self, reason: str = "every GPU at or below 5% for the whole window") -> Self:
        self.state, self.reason = State.IDLE, reason
        return self

    def unknown(self, reason: str) -> Self:
        self.state, self.reason = State.UNKNOWN, reason
        return self

    def holding(self, gpus: int) -> Self:
        self.gpus = gpus
        return self

    def deciding(self, action: Action) -> Self:
        self.action = action
        return self

    def seen(self, *lines: str) -> Self:
        self.evidence.extend(lines)
        return self

    def build(self) -> Decision:
        return Decision(
            WorkloadRef(self.namespace, self.name),
            self.state,
            self.action,
            self.reason,
            gpus=self.gpus,
            peak=0.01 if self.state is not State.BUSY else 0.85,
            coverage=1.0,
            idle_since=NOW - timedelta(minutes=20)
            if self.state in (State.IDLE, State.NOT_RUNNING)
            else None,
            evidence=tuple(self.evidence),
            idle_held_gpus=self.idle_held_gpus,
            rule=A_DEFAULT_RULE,
            assessment=Assessment(self.state, self.reason, unmonitored=self.unmonitored)
            if self.unmonitored or self.state is State.NOT_RUNNING
            else None,
        )

    def row(self) -> WorkloadStatus:
        """The decision on a RayCluster's workload with one pod per GPU."""
        workload = a_workload(self.namespace, self.name)
        for index in range(self.gpus):
            workload.gpu_pod(f"{self.name}-{index}")
        return WorkloadStatus(workload.build(), self.build())


def a_decision(namespace: str, name: str) -> DecisionBuilder:
    return DecisionBuilder(namespace, name)


def with_decision(row: WorkloadStatus, decision: Decision) -> WorkloadStatus:
    """`row` as the classifier would have left it: its own workload, `decision`'s class."""
    return replace(row, decision=replace(decision, workload=row.ref))


def decide_fleet(
    workloads: Iterable[WorkloadInfo],
    usage: Usage,
    *,
    policy: Policy,
    pauses: Pauses,
    now: datetime,
) -> tuple[Decision, ...]:
    """Decide every workload, then apply the per-cycle cap to the deactivations (the policy
    alone, without the loop's reclaim, warning stage and guards)."""
    decisions = [decide(w, usage, policy=policy, pauses=pauses, now=now) for w in workloads]
    return apply_cap(decisions, limit=policy.max_deactivations_per_cycle)
