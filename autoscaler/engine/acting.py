"""The act step of a reconcile pass: deactivate what the decisions say, and nothing else.

Before each action the pauses and the Workload are read again and the Workload decided
again, so a change made since the cycle began (kill switch, exemption, reactivation,
deletion) wins. With guards, one query first re-reads every candidate's newest samples, and
each action writes its durable audit record before the annotations and the patch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from autoscaler.core.errors import ClusterError, Conflict, NotFound
from autoscaler.core.ports import Clock, Cluster, DeactivationAudit
from autoscaler.domain.models import (
    Action,
    ActionRecord,
    Decision,
    FleetUsage,
    Pauses,
    PodRecord,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.domain.policy import Policy, decide
from autoscaler.engine.decision_log import log_action
from autoscaler.engine.guarding import Guards


@dataclass(frozen=True)
class CycleInputs:
    workloads: Sequence[WorkloadInfo]
    gpu_pods: Sequence[PodRecord]
    pauses: Pauses
    usage: FleetUsage
    now: datetime


class Deactivator:
    def __init__(
        self,
        *,
        cluster: Cluster,
        policy: Policy,
        clock: Clock,
        logger: logging.Logger,
        guards: Guards | None = None,
        may_act: Callable[[], bool] = lambda: True,
    ) -> None:
        """`may_act`: asked before the first action and again before each patch, so a leader
        that lost its lease mid-cycle stops at once."""
        self._cluster = cluster
        self._policy = policy
        self._clock = clock
        self._log = logger
        self._guards = guards
        self._may_act = may_act

    def act(self, inputs: CycleInputs, decisions: Sequence[Decision]) -> tuple[ActionRecord, ...]:
        """Deactivate what the decisions say, each checked once more right before."""
        chosen = [d for d in decisions if d.action is Action.DEACTIVATE]
        if not chosen or not self._may_act():
            return ()  # another replica leads: it acts
        try:
            pauses = self._cluster.read_pauses()  # a kill switch set mid-cycle still wins
        except ClusterError as exc:
            return tuple(self._record(d, inputs.now, f"skipped: {exc}") for d in chosen)
        fresh_inputs = replace(inputs, pauses=pauses)
        busy_again = self._fresh_check(inputs, chosen)
        return tuple(
            self._record(d, inputs.now, f"skipped: {busy_again[d.workload]}")
            if d.workload in busy_again
            else self._deactivate(fresh_inputs, d)
            for d in chosen
        )

    def _fresh_check(self, inputs: CycleInputs, chosen: list[Decision]) -> dict[WorkloadRef, str]:
        """One query over every candidate's newest samples; those now busy or unknown stay."""
        if self._guards is None:
            return {}
        wanted = {d.workload for d in chosen}
        candidates = [w for w in inputs.workloads if w.ref in wanted]
        return self._guards.fresh_check(candidates, now=self._clock.now())

    def _deactivate(self, inputs: CycleInputs, decision: Decision) -> ActionRecord:
        try:
            fresh = self._cluster.get_workload(decision.workload)
            if fresh is None:
                return self._record(decision, inputs.now, "skipped: workload is gone")
            again = decide(
                fresh, inputs.usage, policy=self._policy, pauses=inputs.pauses, now=inputs.now
            )
        except (NotFound, Conflict) as exc:
            return self._record(decision, inputs.now, f"skipped, retried next cycle: {exc}")
        except ClusterError as exc:
            return self._record(decision, inputs.now, f"failed: {exc}")
        if again.action is not Action.DEACTIVATE:
            return self._record(decision, inputs.now, f"skipped: now {again.state}")
        return self._patch(fresh, again, now=inputs.now)

    def _patch(self, workload: WorkloadInfo, decision: Decision, *, now: datetime) -> ActionRecord:
        """The durable audit record, the annotations, the patch, then the Event."""
        if not self._may_act():
            return self._record(decision, now, "skipped: no longer the leader")
        guards = self._guards
        if guards is not None:
            try:
                guards.begin(decision, now=now)
            except ClusterError as exc:  # no durable record, no action
                return self._record(decision, now, f"failed: audit record not written: {exc}")
        failure = self._write(workload, decision, now=now)
        if failure is not None:
            if guards is not None:
                guards.failed(decision, now=now, outcome=failure)
            return self._record(decision, now, failure, audited=guards is not None)
        self._announce(workload, decision)
        return self._record(decision, now, "done", audited=guards is not None)

    def _write(self, workload: WorkloadInfo, decision: Decision, *, now: datetime) -> str | None:
        """The annotations, then the patch; the outcome when either fails."""
        try:
            self._cluster.record_deactivation(workload, self._audit(decision, now))
            self._cluster.deactivate(workload)
        except (NotFound, Conflict) as exc:
            return f"skipped, retried next cycle: {exc}"
        except ClusterError as exc:
            return f"failed: {exc}"
        return None

    def _announce(self, workload: WorkloadInfo, decision: Decision) -> None:
        try:
            self._cluster.announce(
                workload, reason="IdleGPUDeactivated", message=deactivation_message(decision)
            )
        except ClusterError as exc:  # the action happened; a missing Event is only reported
            self._log.warning("event not written for %s: %s", decision.workload, exc)

    def _audit(self, decision: Decision, now: datetime) -> DeactivationAudit:
        rules = self._policy.rules
        return DeactivationAudit(
            at=now,
            reason=decision.reason,
            peak=decision.peak,
            threshold=rules.threshold,
            policy=f"threshold {rules.threshold:.0%}, window {rules.window}, "
            f"min coverage {rules.min_coverage:.0%}, grace {self._policy.grace_period}",
        )

    def _record(
        self, decision: Decision, now: datetime, outcome: str, *, audited: bool = False
    ) -> ActionRecord:
        record = ActionRecord(
            workload=decision.workload,
            action=decision.action,
            reason=decision.reason,
            at=now,
            outcome=outcome,
            audited=audited,  # its durable audit record is written: the API must not add one
        )
        log_action(self._log, record)
        return record


def deactivation_message(decision: Decision) -> str:
    name = decision.workload.name
    namespace = decision.workload.namespace
    return (
        f"Deactivated by idle-gpu-autoscaler: {decision.reason}. "
        f"To bring it back: kubectl patch workload {name} -n {namespace} --type merge "
        '-p \'{"spec":{"active":true}}\'. The cluster\'s in-memory Ray state is gone, '
        "and it may wait in the queue until quota is free."
    )
