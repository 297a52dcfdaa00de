"""The warning stage in the loop (ISSUE 15): each decision passes `domain.staging.stage` under
its own rule, and a deactivated row also the delete rung (`domain.deletion.delete_stage`).

Applied twice: in the cycle, after the policy and the when-contended reclaim screen (so a
contended stop is warned when it is picked) and before the guards; and in the act step, on
the Workload read again right before a write, so a snooze, an exemption or a reactivation
made mid-cycle wins. Both read every time back from the Workload's annotations.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import ClusterReader
from autoscaler.domain.kueue_config import GateServed
from autoscaler.domain.models import (
    ActionRecord,
    Decision,
    Pauses,
    PodRecord,
    State,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.domain.notices.deletion import delete_stage
from autoscaler.domain.notices.staging import stage
from autoscaler.domain.outcomes import Outcome
from autoscaler.domain.policy.decisions import Policy, Usage, decide
from autoscaler.domain.policy.via_kueue import judge, marked_at
from autoscaler.engine.cycle.decision_log import log_action


@dataclass(frozen=True)
class CycleInputs:
    """What the cycle read, handed to its act steps."""

    workloads: Sequence[WorkloadInfo]
    gpu_pods: Sequence[PodRecord]
    pauses: Pauses
    usage: Usage  # per rule name: each workload is decided again under its own rule
    now: datetime
    # Whether Kueue serves the priority boost, read once a cycle when a rule says via-kueue
    # (engine/cycle/via_kueue.py); None: no such rule, nothing read.
    served: GateServed | None = None
    # Each marked Workload Kueue preempted, decided as of its eviction (ViaKueue.at_eviction):
    # whether its stop was still due then. Missing: unknown, never stopped.
    at_eviction: Mapping[WorkloadRef, Decision] = field(default_factory=dict)

    @cached_property
    def by_uid(self) -> Mapping[str, WorkloadInfo]:
        """The cycle's Workloads by UID: who a Kueue preemption was for (built once, not
        again for each Workload read again before its write)."""
        return {w.uid: w for w in self.workloads if w.uid}


def staged(
    workload: WorkloadInfo,
    decision: Decision,
    *,
    policy: Policy,
    pauses: Pauses,
    now: datetime,
) -> Decision:
    """One decision through the warning stage (and the delete rung) of its rule."""
    rule = decision.rule
    done = stage(decision, workload, rule=rule, dry_run=policy.dry_run, now=now)
    if done.state is State.DEACTIVATED:
        done = delete_stage(done, workload, rule=rule, policy=policy, pauses=pauses, now=now)
    return done


def stage_all(
    workloads: Sequence[WorkloadInfo],
    decisions: Sequence[Decision],
    *,
    policy: Policy,
    pauses: Pauses,
    now: datetime,
) -> tuple[Decision, ...]:
    return tuple(
        staged(workload, decision, policy=policy, pauses=pauses, now=now)
        for workload, decision in zip(workloads, decisions, strict=True)
    )


def decide_again(fresh: WorkloadInfo, inputs: CycleInputs, *, policy: Policy) -> Decision:
    """The decision on a Workload read again right before acting, its warning stage and the
    via-kueue judgement included (under the pauses and the gate `inputs` carry)."""
    pauses, now = inputs.pauses, inputs.now
    decision = decide(fresh, inputs.usage, policy=policy, pauses=pauses, now=now)
    done = staged(fresh, decision, policy=policy, pauses=pauses, now=now)
    if inputs.served is None and marked_at(fresh) is None:
        return done
    [judged] = judge(
        [fresh],
        [done],
        served=inputs.served,
        by_uid=inputs.by_uid,
        at_eviction=inputs.at_eviction,
        pauses=pauses,
        now=now,
    )
    return judged


def _not_read_again(exc: ClusterError) -> Outcome:
    return Outcome.failed(f"not read again: {exc}")


def _now_decided(again: Decision) -> Outcome:
    return Outcome.skipped(f"now {again.state}: {again.reason}")


def recheck(
    cluster: ClusterReader,
    inputs: CycleInputs,
    decision: Decision,
    *,
    policy: Policy,
    unreadable: Callable[[ClusterError], Outcome] = _not_read_again,
    changed: Callable[[Decision], Outcome] = _now_decided,
) -> tuple[WorkloadInfo, Decision] | Outcome:
    """The Workload read again and decided again; an Outcome (skipped, failed) when it is
    gone, unreadable, or its decision is no longer the cycle's action. `unreadable` and
    `changed` word the last two (each act step keeps the words its records always had)."""
    try:
        fresh = cluster.get_workload(decision.workload)
        if fresh is None:
            return Outcome.skipped("workload is gone")
        again = decide_again(fresh, inputs, policy=policy)  # a snooze made mid-cycle wins
    except ClusterError as exc:
        return unreadable(exc)
    if again.action is not decision.action:
        return changed(again)
    return fresh, again


def action_record(
    logger: logging.Logger,
    decision: Decision,
    *,
    now: datetime,
    outcome: Outcome,
    audited: bool = False,
) -> ActionRecord:
    """The cycle's record of an action, logged once with its outcome."""
    record = ActionRecord(
        workload=decision.workload,
        action=decision.action,
        reason=decision.reason,
        at=now,
        outcome=outcome,
        audited=audited,
    )
    log_action(logger, record)
    return record
