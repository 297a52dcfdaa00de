"""The act step of rule `reclaim: via-kueue` (docs/RECLAIM.md): our priority boost written on
a Workload whose stop is due (the mark), or removed once it is no longer due (the unmark).

Each is the audited path of a stop: the fresh check first for a mark (one query over every
candidate's newest samples: one busy again is not marked), the Workload read again and
judged again, the durable audit record (`mark-for-preemption`, counted in the hourly cap as
a stop begun; `unmark`), then one merge patch of our annotations on the Workload (never its
owner: the boost is ours to set and remove, Kueue reads it there), and an Event.
"""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.core.errors import ClusterError
from autoscaler.domain.models import Action, ActionRecord, Decision, WorkloadInfo, WorkloadRef
from autoscaler.domain.outcomes import Outcome, OutcomeKind
from autoscaler.domain.policy.via_kueue import marking, unmarking
from autoscaler.engine.acting import sequence as actuation
from autoscaler.engine.acting.audited import audited_write, fresh_check
from autoscaler.engine.acting.context import ActContext
from autoscaler.engine.acting.stop import outcome_of, read_again
from autoscaler.engine.cycle.stage import CycleInputs, action_record

MARKED_EVENT = "IdleGPUMarkedForPreemption"
UNMARKED_EVENT = "IdleGPUPreemptionMarkRemoved"
MARKS = (Action.MARK, Action.UNMARK)


class Marker:
    def __init__(self, context: ActContext) -> None:
        self._context = context
        self._actuator, self._policy = context.actuator, context.policy
        self._log, self._leads = context.logger, context.leads

    def act(self, inputs: CycleInputs, decisions: Sequence[Decision]) -> tuple[ActionRecord, ...]:
        chosen = [d for d in decisions if d.action in MARKS]
        if not chosen or not self._leads():
            return ()
        left_alone = self._fresh_check(inputs, chosen)
        return tuple(
            self._record(d, inputs, Outcome.skipped(left_alone[d.workload]))
            if d.workload in left_alone
            else self._write(inputs, d)
            for d in chosen
        )

    def _fresh_check(self, inputs: CycleInputs, chosen: list[Decision]) -> dict[WorkloadRef, str]:
        """A mark leads to a stop: its newest samples are read again first, as a stop's are."""
        marks = [d for d in chosen if d.action is Action.MARK]
        return fresh_check(self._context, inputs.workloads, marks, now=self._context.clock.now())

    def _write(self, inputs: CycleInputs, decision: Decision) -> ActionRecord:
        checked = read_again(
            self._context,
            inputs,
            decision,
            changed=lambda again: f"now {again.state}: {again.action}",
        )
        if isinstance(checked, Outcome):
            return self._record(decision, inputs, checked)
        fresh, again = checked
        outcome, audited = audited_write(
            self._context,
            fresh,
            again,
            now=inputs.now,
            write=lambda: self._patch(fresh, again, inputs),
        )
        if outcome.kind is OutcomeKind.DONE:
            event = MARKED_EVENT if again.action is Action.MARK else UNMARKED_EVENT
            actuation.announce(
                self._actuator, fresh, reason=event, message=_message(again), logger=self._log
            )
        return self._record(again, inputs, outcome, audited=audited)

    def _patch(self, workload: WorkloadInfo, decision: Decision, inputs: CycleInputs) -> Outcome:
        boost = self._policy.via_kueue_boost
        patch = (
            marking(boost=boost, now=inputs.now) if decision.action is Action.MARK else unmarking()
        )
        try:
            self._actuator.annotate_workload(workload, patch)
        except ClusterError as exc:
            return outcome_of(exc)
        return Outcome.done()

    def _record(
        self, decision: Decision, inputs: CycleInputs, outcome: Outcome, *, audited: bool = False
    ) -> ActionRecord:
        return action_record(self._log, decision, now=inputs.now, outcome=outcome, audited=audited)


def _message(decision: Decision) -> str:
    if decision.action is Action.MARK:
        return (
            f"Marked by idle-gpu-autoscaler for Kueue's preemption: {decision.reason}. Kueue "
            "evicts it first when a waiting Workload needs its quota; it is then deactivated. "
            "Busy again, exempted or snoozed, the mark is removed."
        )
    return f"Mark for Kueue's preemption removed by idle-gpu-autoscaler: {decision.reason}."
