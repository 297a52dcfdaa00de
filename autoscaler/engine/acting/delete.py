"""The delete rung's act step (ISSUE 15; rule action `delete`, opt-in), on the leader only.

The same durable path as a deactivation: the Workload read and decided again (an exemption,
a snooze or a reactivation made since wins), the audit record written BEFORE the request
(no record, no delete), then ONE delete of the owner with its UID as read for a
precondition (a RayCluster re-created under the same name is another object and stays),
the Event, and the notification.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from autoscaler.core.errors import ClusterError
from autoscaler.domain.models import Action, ActionRecord, Decision, WorkloadInfo
from autoscaler.domain.outcomes import Outcome
from autoscaler.engine.acting import sequence as actuation
from autoscaler.engine.acting.audited import audited_write
from autoscaler.engine.acting.context import ActContext
from autoscaler.engine.acting.stop import outcome_of
from autoscaler.engine.cycle.stage import CycleInputs, action_record, recheck
from autoscaler.engine.notify.notices import DELETED_EVENT, event_message


class Deleter:
    def __init__(self, context: ActContext) -> None:
        self._context = context
        self._cluster, self._actuator = context.cluster, context.actuator
        self._policy = context.policy
        self._log, self._leads, self._notices = context.logger, context.leads, context.teller

    def act(self, inputs: CycleInputs, decisions: Sequence[Decision]) -> tuple[ActionRecord, ...]:
        chosen = [d for d in decisions if d.action is Action.DELETE]
        if not chosen or not self._leads():
            return ()
        return tuple(self._delete(inputs, decision) for decision in chosen)

    def _delete(self, inputs: CycleInputs, decision: Decision) -> ActionRecord:
        now = inputs.now
        checked = recheck(self._cluster, inputs, decision, policy=self._policy)
        if isinstance(checked, Outcome):
            return action_record(self._log, decision, now=now, outcome=checked)
        fresh, again = checked
        outcome, audited = audited_write(
            self._context,
            fresh,
            again,
            now=now,
            write=lambda: self._request(fresh, again, now=now),
        )
        return action_record(self._log, again, now=now, outcome=outcome, audited=audited)

    def _request(self, workload: WorkloadInfo, decision: Decision, *, now: datetime) -> Outcome:
        try:
            self._actuator.delete_owner(workload)
        except ClusterError as exc:
            return outcome_of(exc)
        actuation.announce(
            self._actuator,
            workload,
            reason=DELETED_EVENT,
            message=event_message(decision, workload=workload),
            logger=self._log,
        )
        rule = decision.rule
        self._notices.tell(workload, decision, rule=rule, now=now, logger=self._log)
        return Outcome.done()
