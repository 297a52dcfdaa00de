"""The service's actions and notices in the live view's words: "warned first-raycluster: stop
planned at 11:20", "snoozed until 11:35 by demo-admin", "deactivated ...".

Times are the simulated clock's, as HH:MM: the story spans a morning, and the view's stamps
read the same way.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from autoscaler.demo.story import Cycle, World
from autoscaler.domain.models import Action, ActionRecord, Decision
from autoscaler.domain.notices.held import what_is_wrong, words_for
from autoscaler.domain.notices.notice import Notice
from autoscaler.domain.outcomes import OutcomeKind
from autoscaler.domain.policy.management import DEFAULT_MANAGER, MANAGERS, Manager
from autoscaler.domain.policy.owner_words import stop_words
from autoscaler.domain.usage.assessment import held_class

STOPPING = (Action.DEACTIVATE, Action.DELETE)  # the actions after which a workload is gone
# An ISO 8601 timestamp in a reason, as the API writes it: its HH:MM is kept
_TIMESTAMP = re.compile(
    r"\d{4}-\d\d-\d\dT(?P<clock>\d\d:\d\d)(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"
)


def managed_name(name: str, manager: Manager, *more: str) -> str:
    """The name, with who manages it when that is not Kueue, and `more`:
    "kai-notebook (KAI Scheduler, suspended)"."""
    by = MANAGERS[manager].named
    return name if by is None else f"{name} ({', '.join((by, *more))})"


def clock_times(reason: str) -> str:
    """A reason's annotation-style timestamps as the rest of the demo writes times: "stop
    planned at 2026-03-02T10:40:00Z" reads "stop planned at 10:40" (the story's clock). The
    reasons that already write a clock ("in grace period until 10:25") pass unchanged."""
    return _TIMESTAMP.sub(lambda found: found["clock"], reason)


def held_why(decision: Decision) -> str:
    """Why a workload idle past its window was left running ("left running until contended:
    nobody waits that it would let in (rule ...)", a guard's hold): its reason without the
    idle verdict in front, which the view's state and the summary's "idle N min" already say
    (`explain` keeps its numbers)."""
    verdict = decision.assessment
    if verdict is None:
        return clock_times(decision.reason)
    return clock_times(decision.reason.removeprefix(f"{verdict.reason}; "))


def stopped_word(manager: Manager) -> str:
    """What the service's stop is called: a Workload is deactivated, a RayCluster suspended."""
    return MANAGERS[manager].stopped


def notice_text(notice: Notice) -> str | None:
    """The snooze, the planned stop and the planned deletion, each when there is one."""
    parts = []
    if notice.snoozed_until is not None:
        parts.append(f"snoozed until {notice.snoozed_until:%H:%M} by {notice.snoozed_by or '?'}")
    if notice.stop_at is not None and notice.stop_at != notice.snoozed_until:
        parts.append(f"stop planned at {notice.stop_at:%H:%M}")
    elif notice.stop_at is not None:
        parts.append("then stop")  # warned again: the stop comes when the snooze ends
    if notice.delete_at is not None:
        parts.append(f"deletion planned at {notice.delete_at:%H:%M}")
    return ", ".join(parts) or None


def action_text(world: World, cycle: Cycle, record: ActionRecord) -> str:
    """One line per action the cycle took: done ones in their own words, the others with
    their outcome and reason."""
    name = world.cluster.spec(record.workload).known_as
    row = cycle.snapshot.find(record.workload)
    decision = row.decision if row is not None else None
    reason = clock_times(record.reason)
    if decision is not None and decision.beneficiary is not None:
        # the reason ends with the waiter's Workload: name its RayCluster instead
        name += f" for {world.cluster.spec(decision.beneficiary).known_as}, which waits"
        reason = reason.rpartition("; ")[0] or reason
    if record.outcome.kind is not OutcomeKind.DONE:
        return f"{record.action.value} {name}: {record.outcome} ({reason})"
    if decision is not None and record.action in (Action.WARN, Action.WARN_DELETE):
        warned = _warned_text(name, decision, action=record.action, now=cycle.now)
        return warned or f"warned {name}: {reason}"
    if record.action is Action.DEACTIVATE:
        word = stopped_word(row.info.manager if row is not None else DEFAULT_MANAGER)
    else:
        word = _DONE_WORDS.get(record.action, record.action.value)
    return f"{word} {name}: {reason}"


def requeue_text(world: World, cycle: Cycle, record: ActionRecord) -> str | None:
    """What a done stop that is a requeue means, in the owner kind's words: "Notebook
    ml/alice yields its GPUs to the queue; it comes back when quota is free (...)"."""
    if record.action is not Action.DEACTIVATE or record.outcome.kind is not OutcomeKind.DONE:
        return None
    row = cycle.snapshot.find(record.workload)
    if row is None:
        return None
    words = stop_words(row.info.owner, manager=row.info.manager)
    return None if words.lasts else f"{world.cluster.spec(record.workload).known_as} {words.said}"


_DONE_WORDS = {  # a deactivation's word is the manager's: `stopped_word`
    Action.ALL_CLEAR: "all clear for",
    Action.NOTIFY_IDLE_HELD: "told the owners of",
    Action.DELETE: "deleted",
}


def _warned_text(name: str, decision: Decision, *, action: Action, now: datetime) -> str | None:
    """A planned stop in the words of how it holds its GPUs: "warned vit-trainer: GPUs
    held, not running: stop planned at 09:31, in 15 min — image ... for 16 min (...)"."""
    notice = decision.notice
    planned, what, label, wrong = notice.stop_at, "stop", "", None
    if action is Action.WARN_DELETE:
        planned, what = notice.delete_at, "deletion"
    else:
        label, wrong = words_for(held_class(decision)).label, what_is_wrong(decision)
    if planned is None:
        return None
    ahead = int((planned - now) / timedelta(minutes=1))
    told = f" — {wrong}" if wrong else ""
    return (
        f"warned {name}: {label}{what} planned at {planned:%H:%M}, in {ahead} min{told} "
        "(an Event, annotations and the notifications say so)"
    )
