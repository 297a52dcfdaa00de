"""What the loop tells people about a notice (ISSUE 15): the Event's reason and words, and
the notification handed to the sink for the workload's targets.

The Event is always written (a namespace with no target still sees it with
`kubectl get events`); the notification goes to the targets `route` names (compose passes
`domain.routing.targets_for` with the settings' defaults). Without notifications built, the
sink is `NO_NOTIFICATIONS` and only the Events tell.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from autoscaler.core.ports import NotificationSink
from autoscaler.domain.annotations import time_text
from autoscaler.domain.models import Action, Decision, WorkloadInfo
from autoscaler.domain.notices.held import what_is_wrong, words_for
from autoscaler.domain.notices.notifications import NoticeKind, Notification
from autoscaler.domain.policy.owner_words import named, stop_words
from autoscaler.domain.policy.rules import Rule
from autoscaler.domain.program import PROGRAM
from autoscaler.domain.usage.assessment import held_class

Route = Callable[[WorkloadInfo, Rule], Sequence[str]]

STOP_PLANNED_EVENT = "IdleGPUStopPlanned"
ALL_CLEAR_EVENT = "IdleGPUAllClear"
IDLE_HELD_EVENT = "IdleGPUIdleHeld"
DELETE_PLANNED_EVENT = "IdleGPUDeletePlanned"
DELETED_EVENT = "IdleGPUDeleted"

# What the warning stage asks of the notice act step (`engine.warner`), each told; they recur
# within one idle episode (a warning again after a snooze), so the loop audit tells them apart.
NOTICE_ACTIONS = (Action.WARN, Action.ALL_CLEAR, Action.NOTIFY_IDLE_HELD, Action.WARN_DELETE)
KIND_OF = {
    Action.WARN: NoticeKind.WARNING,
    Action.ALL_CLEAR: NoticeKind.ALL_CLEAR,
    Action.NOTIFY_IDLE_HELD: NoticeKind.IDLE_HELD,
    Action.WARN_DELETE: NoticeKind.DELETE_WARNING,
    Action.DELETE: NoticeKind.DELETED,
    Action.DEACTIVATE: NoticeKind.DEACTIVATED,
}
EVENT_OF = {
    Action.WARN: STOP_PLANNED_EVENT,
    Action.ALL_CLEAR: ALL_CLEAR_EVENT,
    Action.NOTIFY_IDLE_HELD: IDLE_HELD_EVENT,
    Action.WARN_DELETE: DELETE_PLANNED_EVENT,
    Action.DELETE: DELETED_EVENT,
}


class _NoNotifications:
    """The sink when notifications are not built: the Events alone tell."""

    def submit(self, notification: Notification, *, targets: Sequence[str]) -> None:
        return None


NO_NOTIFICATIONS: NotificationSink = _NoNotifications()


def _nobody(workload: WorkloadInfo, rule: Rule) -> Sequence[str]:
    return ()


@dataclass(frozen=True)
class NoticeTeller:
    """Tells people about a notice: where the loop hands notifications (`sink`), and who
    hears about a workload under its rule (`route`)."""

    sink: NotificationSink = NO_NOTIFICATIONS
    route: Route = field(default=_nobody)

    def tell(
        self,
        workload: WorkloadInfo,
        decision: Decision,
        *,
        rule: Rule,
        now: datetime,
        logger: logging.Logger,
    ) -> None:
        """Never raises: the sink only queues (and never raises), and a failing route must
        not stop the loop: the act is done and its Event written, so it is logged and the
        notification dropped."""
        try:
            targets = tuple(self.route(workload, rule))
        except Exception:  # a bug in the route; the caller's act already happened
            logger.exception("notification of %s not sent: its targets failed", workload.ref)
            return
        kind = KIND_OF[decision.action]
        self.sink.submit(notification_of(kind, workload, decision, now=now), targets=targets)


EVENTS_ONLY = NoticeTeller()  # no sink, no route: the Events alone tell


def notification_of(
    kind: NoticeKind, workload: WorkloadInfo, decision: Decision, *, now: datetime
) -> Notification:
    notice = decision.notice
    warning = kind is NoticeKind.WARNING
    return Notification(
        kind=kind,
        workload=decision.workload,
        uid=workload.uid,
        owner=workload.owner,
        rule=decision.rule.name,
        reason=decision.reason,
        at=now,
        gpus=decision.gpus,
        stop_at=notice.delete_at if kind is NoticeKind.DELETE_WARNING else notice.stop_at,
        warned_at=notice.warned_at if warning else None,
        snoozed_until=notice.snoozed_until,
        snoozed_by=notice.snoozed_by,
        idle_held_gpus=decision.idle_held_gpus,
        held=held_class(decision),
        wrong=what_is_wrong(decision),
        manager=workload.manager,
    )


def event_message(decision: Decision, *, workload: WorkloadInfo) -> str:
    """The Event's words: what is planned and when, why, and how to keep it, in the words of
    how it holds its GPUs (`domain/notices/held.py`); the owner named as people know it and
    what a stop means for its kind (`domain/policy/owner_words.py`)."""
    ref, notice = decision.workload, decision.notice
    words, wrong = words_for(held_class(decision)), what_is_wrong(decision)
    owner = named(ref, workload.owner)
    stop = stop_words(workload.owner, manager=workload.manager)
    keep = (
        f"To keep it: {PROGRAM} snooze {ref} 4h, or POST "
        f"/api/v1/workloads/{ref.namespace}/{ref.name}/snooze "
        f'(body {{"duration": "4h", "reason": "..."}}), or {words.keep}.'
    )
    if decision.action is Action.WARN:
        when = f"at {time_text(notice.stop_at)}" if notice.stop_at else "(no stop planned)"
        told = f" — {wrong} —" if wrong else ""
        return (
            f"{words.headline}: stop planned {when}{told} by idle-gpu-autoscaler: "
            f"{decision.reason}. {owner}: {words.because}. {stop.if_stopped}. {keep}"
        )
    if decision.action is Action.ALL_CLEAR:
        return f"The planned stop is off: {decision.reason}."
    if decision.action is Action.NOTIFY_IDLE_HELD:
        return (
            f"{decision.idle_held_gpus} of its {decision.gpus} GPUs sat idle the whole window "
            f"while others worked: {decision.reason}. Nothing is stopped; consider fewer GPUs."
        )
    if decision.action is Action.WARN_DELETE:
        when = time_text(notice.delete_at) if notice.delete_at else "soon"
        return (
            f"Deactivated and unused: its owner will be deleted at {when} by "
            f"idle-gpu-autoscaler: {decision.reason}. {owner} goes for good. {keep}"
        )
    return f"Deleted by idle-gpu-autoscaler: {decision.reason}. {owner} is gone."


def send(
    teller: NoticeTeller, notification: Notification, *, workload: WorkloadInfo, rule: Rule
) -> None:
    """Hand a notification made outside the loop (a snooze through the API) to the targets
    the loop's route names for the workload. None named: nothing is submitted, the Event
    alone tells."""
    targets = tuple(teller.route(workload, rule))
    if targets:
        teller.sink.submit(notification, targets=targets)
