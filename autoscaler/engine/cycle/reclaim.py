"""Reclaim only where someone waits: an idle workload whose rule says `when-contended` is
stopped only for a waiting Workload that freeing it lets in (`domain/queues/contention.py`).

The queues are read (through the `PendingWork` port) only in a cycle where such a workload
is due, so a fleet without `when-contended` rules costs no extra request. No data about the
waiters stops nothing under `when-contended`; rules that say `always` are never touched here.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace

from autoscaler.core.ports import PendingWork
from autoscaler.domain.guards.caps import ACTING
from autoscaler.domain.models import Action, Decision, WaitersSeen, WorkloadInfo
from autoscaler.domain.queues.contention import (
    ReclaimPlan,
    WaiterOutcome,
    candidate_of,
    plan_reclaim,
)
from autoscaler.domain.queues.facts import QueueFacts

NO_READER = "no reader of pending work is configured"


class Reclaimer:
    def __init__(self, *, pending: PendingWork | None, logger: logging.Logger) -> None:
        self._pending = pending
        self._log = logger

    def screen(
        self,
        workloads: Sequence[WorkloadInfo],
        decisions: Sequence[Decision],
        *,
        contended: Callable[[Decision], bool],
    ) -> tuple[tuple[Decision, ...], WaitersSeen | None]:
        """The decisions with every `when-contended` stop kept only if it serves a waiter
        (and names it), else left running with the reason."""
        due = [
            (info, d)
            for info, d in zip(workloads, decisions, strict=True)
            if d.action in ACTING and contended(d)
        ]
        if not due:
            return tuple(decisions), None
        facts = self._read()
        candidates = [
            c
            for info, d in due
            if d.idle_since is not None
            and (c := candidate_of(info, idle_since=d.idle_since)) is not None
        ]
        plan = plan_reclaim(candidates, facts)
        self._log_waiters(plan)
        due_refs = {d.workload for _, d in due}
        screened = tuple(_judged(d, plan) if d.workload in due_refs else d for d in decisions)
        return screened, _seen(facts, plan)

    def _read(self) -> QueueFacts:
        if self._pending is None:
            return QueueFacts(failure=NO_READER)
        return self._pending.read_queues()

    def _log_waiters(self, plan: ReclaimPlan) -> None:
        if plan.failure is not None:
            self._log.warning(
                "who waits is unknown: %s; when-contended rules stop nothing", plan.failure
            )
        for report in plan.waiters:
            self._log.info(
                "waiter %s (%s): %s: %s",
                report.waiter,
                report.cluster_queue,
                report.outcome.value,
                report.reason,
                extra={"namespace": report.waiter.namespace, "workload": report.waiter.name},
            )


def _seen(facts: QueueFacts, plan: ReclaimPlan) -> WaitersSeen:
    """What the cycle judged, for /metrics and `explain`: counts and classes, no names,
    but for each freed workload the judgement of the waiter it is freed for (its names told
    per caller: domain/tenant_names.py)."""
    outcomes = Counter(report.outcome.value for report in plan.waiters)
    unknown = Counter(r.unknown_why.value for r in plan.waiters if r.unknown_why is not None)
    served = {ref: report.served_for() for report in plan.waiters for ref in report.freed}
    return WaitersSeen(
        facts.source, facts.failure, facts.notes, dict(outcomes), dict(unknown), served
    )


def _judged(decision: Decision, plan: ReclaimPlan) -> Decision:
    waiter = plan.beneficiary_of(decision.workload)
    if waiter is not None:
        # Named in full here (the snapshot keeps it); each surface tells it per caller.
        return replace(
            decision,
            beneficiary=waiter.ref,
            beneficiary_queue=waiter.cluster_queue,
            reason=f"{decision.reason}; frees quota for {waiter.ref}, which waits",
        )
    why = f"left running until contended: {_why_not(plan, rule=decision.rule.name)}"
    return replace(decision, action=Action.NONE, reason=f"{decision.reason}; {why}")


def _why_not(plan: ReclaimPlan, *, rule: str) -> str:
    """Nobody it would let in, or who waits is unknown; the rule (which reclaims only when
    contended) and the waiters' counts in brackets after it."""
    if plan.failure is not None:
        return f"who waits is unknown (rule {rule}; {plan.failure})"
    parts = [f"rule {rule}"]
    if unknown := plan.count(WaiterOutcome.FIT_UNKNOWN):
        parts.append(f"{unknown} waiter(s) with fit unknown")
    if behind := plan.count(WaiterOutcome.ANOTHER_HEAD_FIRST):
        parts.append(f"{behind} waiter(s) behind another queue's head by fair sharing")
    # Why Kueue would not admit them anyway (a taint, a node selector, a quota), unnamed:
    # the waiter may be another tenant's.
    if cannot := [r for r in plan.waiters if r.outcome is WaiterOutcome.CANNOT_FIT]:
        parts.append(f"{len(cannot)} waiter(s) that cannot fit, the first: {cannot[0].reason}")
    return f"nobody waits that it would let in ({'; '.join(parts)})"
