"""The act step of a reconcile pass: deactivate what the decisions say, and nothing else.

Before each action the Workload is read again and decided again, under the pauses the act
steps read again (`acting/steps.py`), so a change made since the cycle began (kill switch,
exemption, reactivation, deletion) wins. The fresh check first re-reads every candidate's
newest samples in one query, and each action writes its durable audit record before its
patch (`acting/audited.py`). The writes themselves are the act sequence of
`acting/sequence.py`, shared with the REST API.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from autoscaler.core.errors import AnswerLost, ClusterError, Conflict, NotFound
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.audit.stopped import bring_back_command
from autoscaler.domain.guards.caps import release_broken_sets
from autoscaler.domain.models import (
    Action,
    ActionRecord,
    Decision,
    State,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.domain.outcomes import Outcome, OutcomeKind
from autoscaler.domain.policy.owner_words import named, stop_words
from autoscaler.domain.usage.assessment import held_class
from autoscaler.engine.acting import sequence as actuation
from autoscaler.engine.acting.audited import audited_write, fresh_check
from autoscaler.engine.acting.context import ActContext
from autoscaler.engine.cycle.stage import CycleInputs, action_record, recheck


class Deactivator:
    def __init__(self, context: ActContext) -> None:
        """`context.leads` is asked before the first action and again before each patch
        (`audited_write`), so a leader that lost its lease mid-cycle stops at once;
        `context.teller` tells a done deactivation (ISSUE 15)."""
        self._context = context
        self._actuator, self._clock, self._log = context.actuator, context.clock, context.logger
        self._leads, self._notices = context.leads, context.teller

    def act(self, inputs: CycleInputs, decisions: Sequence[Decision]) -> tuple[ActionRecord, ...]:
        """Deactivate what the decisions say, each checked once more right before. The
        pauses in `inputs` were read again after the cycle's decisions (`ActSteps.act`)."""
        chosen = [d for d in decisions if d.action is Action.DEACTIVATE]
        if not chosen or not self._leads():
            return ()  # another replica leads: it acts
        checked = self._checked_again(inputs, chosen)
        return tuple(
            self._deactivate(inputs, d)
            if again.action is Action.DEACTIVATE
            else self._record(d, inputs.now, Outcome.skipped(again.reason))
            for d, again in zip(chosen, checked, strict=True)
        )

    def _checked_again(self, inputs: CycleInputs, chosen: list[Decision]) -> tuple[Decision, ...]:
        """The fresh check: a candidate busy or unknown now stays, and so does the rest of a
        waiter's set it belonged to (the caps' rule, `release_broken_sets`)."""
        left_alone = self._fresh_check(inputs, chosen)
        return release_broken_sets(
            [
                replace(d, action=Action.NONE, reason=left_alone[d.workload])
                if d.workload in left_alone
                else d
                for d in chosen
            ]
        )

    def _fresh_check(self, inputs: CycleInputs, chosen: list[Decision]) -> dict[WorkloadRef, str]:
        """One query over every candidate's newest samples; those now busy or unknown stay.
        A not-running candidate has no samples to re-read: Kubernetes says its pods do not
        run, and deciding again on the Workload and pods read again (`_deactivate`) checks
        that still holds."""
        wanted = [
            d
            for d in chosen
            # Kueue preempted it after our mark: its pods are going, nothing to re-read
            if d.state is not State.NOT_RUNNING and not d.kueue_preempted
        ]
        return fresh_check(self._context, inputs.workloads, wanted, now=self._clock.now())

    def _deactivate(self, inputs: CycleInputs, decision: Decision) -> ActionRecord:
        checked = read_again(
            self._context, inputs, decision, changed=lambda again: f"now {again.state}"
        )
        if isinstance(checked, Outcome):
            return self._record(decision, inputs.now, checked)
        fresh, again = checked
        # The cycle's reclaim plan chose whom this stop serves; deciding again keeps that.
        again = replace(
            again,
            beneficiary=decision.beneficiary,
            beneficiary_queue=decision.beneficiary_queue,
            reason=decision.reason,
        )
        return self._patch(fresh, again, now=inputs.now)

    def _patch(self, workload: WorkloadInfo, decision: Decision, *, now: datetime) -> ActionRecord:
        """The durable audit record, then the act sequence (one patch, owner, Event)."""
        outcome, audited = audited_write(
            self._context,
            workload,
            decision,
            now=now,
            write=lambda: self._write(workload, decision, now=now),
        )
        if outcome.kind is OutcomeKind.DONE:
            rule = decision.rule
            self._notices.tell(workload, decision, rule=rule, now=now, logger=self._log)
        return self._record(decision, now, outcome, audited=audited)

    def _write(self, workload: WorkloadInfo, decision: Decision, *, now: datetime) -> Outcome:
        try:
            actuation.deactivate(
                self._actuator,
                workload,
                audit=self._audit(decision, now),
                message=deactivation_message(decision, workload=workload),
                logger=self._log,
            )
        except ClusterError as exc:
            return outcome_of(exc)
        return Outcome.done()

    def _audit(self, decision: Decision, now: datetime) -> DeactivationAudit:
        rule = decision.rule
        rules = rule.usage
        return DeactivationAudit(
            at=now,
            reason=decision.reason,
            peak=decision.peak,
            threshold=rules.threshold,
            policy=policy_text(decision),
            beneficiary=str(decision.beneficiary) if decision.beneficiary else None,
            beneficiary_queue=decision.beneficiary_queue,
            rule=rule.name,
            coverage=decision.coverage,
            idle_since=decision.idle_since,
        )

    def _record(
        self, decision: Decision, now: datetime, outcome: Outcome, *, audited: bool = False
    ) -> ActionRecord:
        # audited: its durable audit record is written, the loop audit must not add one
        return action_record(self._log, decision, now=now, outcome=outcome, audited=audited)


def policy_text(decision: Decision) -> str:
    """The rule's numbers that made this stop due, on one line: the idle ones (threshold,
    window, coverage), or for quota held without work the not-running limit (`notRunningAfter`);
    then the grace period."""
    rule = decision.rule
    rules = rule.usage
    if held_class(decision) is State.NOT_RUNNING:
        limit = f"not running after {rules.not_running_after}"
    else:
        limit = (
            f"threshold {rules.threshold:.0%}, window {rules.window}, "
            f"min coverage {rules.min_coverage:.0%}"
        )
    return f"rule {rule.name}: {limit}, grace {rule.grace_period}"


def read_again(
    context: ActContext,
    inputs: CycleInputs,
    decision: Decision,
    *,
    changed: Callable[[Decision], str],
) -> tuple[WorkloadInfo, Decision] | Outcome:
    """A stop's or a mark's Workload read again and decided again right before its write
    (`recheck`): one that cannot be read is a read's lost answer (nothing was written);
    `changed` words a decision that is no longer the cycle's action (skipped)."""
    return recheck(
        context.cluster,
        inputs,
        decision,
        policy=context.policy,
        unreadable=lambda exc: outcome_of(exc, wrote=False),
        changed=lambda again: Outcome.skipped(changed(again)),
    )


def outcome_of(exc: ClusterError, *, wrote: bool = True) -> Outcome:
    """How a call that raised went: a write whose answer was lost may have applied (a read's
    lost answer changed nothing); a 404 or 409 is decided again next cycle; anything else
    was refused."""
    if isinstance(exc, AnswerLost) and wrote:
        return Outcome.unknown(f"answer lost, settled next cycle: {exc}")
    if isinstance(exc, NotFound | Conflict):
        return Outcome.skipped(f"retried next cycle: {exc}")
    return Outcome.failed(str(exc))


ACTIVE_AGAIN = '{"spec":{"active":true}}'  # the merge patch that undoes our stop


def deactivation_message(decision: Decision, *, workload: WorkloadInfo) -> str:
    """What was done and why, the owner as people know it and what the stop means for its
    kind (`domain/policy/owner_words.py`), and how to bring it back where it lasts."""
    name = decision.workload.name
    namespace = decision.workload.namespace
    waiter = decision.beneficiary
    for_whom = f"Its GPUs are for the waiting Workload {waiter}. " if waiter else ""
    stop = stop_words(workload.owner, manager=workload.manager)
    owner = named(decision.workload, workload.owner)
    done = f"Deactivated by idle-gpu-autoscaler: {decision.reason}. {for_whom}"
    if not stop.lasts:
        return f"{done}{owner} {stop.said}."
    return (
        f"{done}{owner}: {stop.means}. "
        f"To bring it back: {bring_back_command(workload)} (without the CLI: kubectl patch "
        f"workload {name} -n {namespace} --type merge -p '{ACTIVE_AGAIN}'). "
        "Its in-memory state is gone, and it may wait in the queue until quota is free."
    )
