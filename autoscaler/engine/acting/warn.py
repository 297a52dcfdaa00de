"""The notice act step (ISSUE 15), on the leader only, like the Deactivator: a warning, an
all-clear, idle-held GPUs told, a deletion warned.

Each is, in order: the Workload read and decided again (a snooze or exemption made
mid-cycle wins), ONE annotation write on the Workload (the record every later cycle reads
the notice back from, after a restart too), the planned time shown on the owner, the Event,
then the notification. A notification goes only after its annotation write succeeded: a
warning nobody recorded must not be announced. A failed write is a failed action, retried
next cycle, and nobody is told. A write whose answer was lost is read back: applied, it is
announced and told like any other (its stop will come); else it is settled next cycle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from autoscaler.core.errors import AnswerLost, ClusterError
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import optional_time_text, time_text
from autoscaler.domain.models import Action, ActionRecord, Decision, WorkloadInfo
from autoscaler.domain.outcomes import Outcome
from autoscaler.engine.acting import sequence as actuation
from autoscaler.engine.acting.context import ActContext
from autoscaler.engine.acting.stop import outcome_of
from autoscaler.engine.cycle.stage import CycleInputs, action_record, recheck
from autoscaler.engine.notify.notices import EVENT_OF, NOTICE_ACTIONS, event_message

Patch = Mapping[str, str | None]


class Warner:
    def __init__(self, context: ActContext) -> None:
        self._cluster, self._actuator = context.cluster, context.actuator
        self._policy = context.policy
        self._log, self._leads, self._notices = context.logger, context.leads, context.teller

    def act(self, inputs: CycleInputs, decisions: Sequence[Decision]) -> tuple[ActionRecord, ...]:
        chosen = [d for d in decisions if d.action in NOTICE_ACTIONS]
        if not chosen or not self._leads():
            return ()  # another replica leads: it writes and tells
        return tuple(self._notice(inputs, decision) for decision in chosen)

    def _notice(self, inputs: CycleInputs, decision: Decision) -> ActionRecord:
        now = inputs.now
        checked = recheck(self._cluster, inputs, decision, policy=self._policy)
        if isinstance(checked, Outcome):
            return action_record(self._log, decision, now=now, outcome=checked)
        fresh, again = checked
        if not self._leads():
            return action_record(self._log, again, now=now, outcome=_NOT_LEADING)
        patch = workload_patch(fresh, again, now=now)
        try:
            self._actuator.annotate_workload(fresh, patch)
        except ClusterError as exc:  # nothing recorded: nobody is told, retried next cycle
            if not self._applied(fresh, patch, exc):
                return action_record(self._log, again, now=now, outcome=outcome_of(exc))
        actuation.show_on_owner(
            self._actuator, fresh, owner_patch(again), what="planned time", logger=self._log
        )
        message = event_message(again, workload=fresh)
        reason = EVENT_OF[again.action]
        actuation.announce(self._actuator, fresh, reason=reason, message=message, logger=self._log)
        rule = again.rule
        self._notices.tell(fresh, again, rule=rule, now=now, logger=self._log)
        return action_record(self._log, again, now=now, outcome=Outcome.done())

    def _applied(self, workload: WorkloadInfo, patch: Patch, exc: ClusterError) -> bool:
        """Whether a write whose answer was lost applied after all, read back: if it did, the
        notice is recorded and the stop will come, so it must still be announced and told."""
        if not isinstance(exc, AnswerLost):
            return False
        try:
            found = self._cluster.get_workload(workload.ref)
        except ClusterError as again:
            self._log.warning("lost write on %s not read back: %s", workload.ref, again)
            return False
        if found is None or found.uid != workload.uid:
            return False
        return all(found.annotations.get(key) == value for key, value in patch.items())


_NOT_LEADING = Outcome.skipped("no longer the leader")


def workload_patch(workload: WorkloadInfo, decision: Decision, *, now: datetime) -> Patch:
    """The annotations that record the notice on the Workload (None removes a key)."""
    notice = decision.notice
    if decision.action is Action.WARN:
        return {
            keys.WARNED_AT: time_text(notice.warned_at or now),
            keys.WARNED_UID: workload.uid,
            keys.STOP_PLANNED_AT: optional_time_text(notice.stop_at),  # a warn rule plans no stop
        }
    if decision.action is Action.ALL_CLEAR:
        return dict.fromkeys(keys.WARNING_KEYS)
    if decision.action is Action.NOTIFY_IDLE_HELD:
        return {keys.IDLE_HELD_NOTIFIED_AT: time_text(now)}
    return {
        keys.DELETE_WARNED_AT: time_text(now),
        keys.DELETE_PLANNED_AT: optional_time_text(notice.delete_at),
    }


def owner_patch(decision: Decision) -> Patch:
    """The planned time shown on the owner, where people look (`kubectl get raycluster`)."""
    if decision.action is Action.WARN:
        return {keys.STOP_PLANNED_AT: optional_time_text(decision.notice.stop_at)}
    if decision.action is Action.ALL_CLEAR:
        return {keys.STOP_PLANNED_AT: None}
    if decision.action is Action.WARN_DELETE:
        return {keys.DELETE_PLANNED_AT: optional_time_text(decision.notice.delete_at)}
    return {}
