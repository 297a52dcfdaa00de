"""The warning stage (ISSUE 15): no stop without a warning given at least `warnBefore` earlier.

Applied to each decision after the policy (`domain/policy/decisions.py`) and the when-contended
reclaim
screen, so a contended stop is warned when it is picked, and again in the act step on the
fresh Workload, so a snooze made mid-cycle wins. Pure: the notice is read back from the
Workload's annotations (`domain/notices/reading.py`), so the same annotations give the same
answer after a restart, whichever replica asks.

For a rule that stops (`deactivate`, `delete`) with a lead time:
- a stop the policy wants, or one due within the lead time, without a warning that counts, is
  turned into WARN, promising the stop at the due time and never sooner than the lead time;
- with a warning, the stop goes ahead at max(promised time, warned-at + warnBefore) and not
  before; until then the decision waits;
- a snooze in force holds the stop (State.SNOOZED) and is itself warned about ahead of its end;
- busy, loading or idle-held (some of its GPUs are busy: the work is in use, a stop of it
  was never due) clears a warning that counts (ALL_CLEAR);
- every other state (unknown, paused, grace, exempt, deferred by a guard, ...) holds the
  warning as it is: no stop, no clear. No data never stops, and never clears either.
A `warn` rule warns once its workload is idle the whole window and never stops. Dry run writes
nothing: no warning is given, the reason says one would be.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from autoscaler.domain.annotations import promise_time, time_text
from autoscaler.domain.durations import format_duration
from autoscaler.domain.models import Action, Decision, State, WorkloadInfo
from autoscaler.domain.notices.reading import (
    STOPPING,
    idle_held_told,
    read_notice,
)
from autoscaler.domain.policy.rules import Reclaim, Rule, RuleAction

IN_USE = frozenset({State.BUSY, State.LOADING, State.IDLE_HELD})
# The policy's stop, or the stop the per-cycle cap held back: either is due now.
STOP_DUE = frozenset({Action.DEACTIVATE, Action.DEFERRED})
NO_LEAD = timedelta(0)

__all__ = ["read_notice", "stage"]


def stage(
    decision: Decision, workload: WorkloadInfo, *, rule: Rule, dry_run: bool, now: datetime
) -> Decision:
    """The decision with its notice read, and its action turned by the warning stage."""
    staged = replace(decision, notice=read_notice(workload, rule=rule, now=now))
    if staged.state in IN_USE:
        return _in_use(staged, workload, rule=rule, dry_run=dry_run)
    if rule.action is RuleAction.WARN:
        return _warn_only(staged, dry_run=dry_run, now=now)
    if rule.action not in STOPPING:
        return staged
    if dry_run:
        return _dry_run(staged, lead=rule.notice.warn_before)
    return _towards_stop(staged, rule=rule, now=now)


def _in_use(decision: Decision, workload: WorkloadInfo, *, rule: Rule, dry_run: bool) -> Decision:
    """Busy, loading or idle-held: a warning that counts is cleared; idle-held GPUs are told
    once per admission (not by an observe-only rule, nor in dry run: both write nothing)."""
    warned_at = decision.notice.warned_at
    if warned_at is not None and not dry_run:
        why = f"{decision.reason}; all clear: {decision.state.value} after the warning of "
        return replace(decision, action=Action.ALL_CLEAR, reason=why + time_text(warned_at))
    if (
        decision.state is State.IDLE_HELD
        and rule.action is not RuleAction.OBSERVE
        and not dry_run
        and not idle_held_told(workload)
    ):
        why = f"{decision.reason}; {decision.idle_held_gpus} idle GPUs held: owners told"
        return replace(decision, action=Action.NOTIFY_IDLE_HELD, reason=why)
    return decision


def _warn_only(decision: Decision, *, dry_run: bool, now: datetime) -> Decision:
    """A `warn` rule: idle the whole window, told once (until activity or a snooze answers)."""
    if decision.notice.snoozed_until is not None and decision.state is State.IDLE:
        return _snoozed(decision)
    idle_all_window = decision.state is State.IDLE and decision.time_left == NO_LEAD
    if not idle_all_window or decision.notice.warned_at is not None:
        return decision
    if dry_run:
        return replace(decision, reason=f"{decision.reason}; would warn (dry run)")
    return _warn(decision, stop_at=None, now=now, why="warning, no stop planned")


def _dry_run(decision: Decision, *, lead: timedelta) -> Decision:
    if decision.notice.snoozed_until is not None and decision.state is State.IDLE:
        return _snoozed(decision)
    if decision.action is Action.WOULD_DEACTIVATE and lead > NO_LEAD:
        first = f"would warn {format_duration(lead, split='always')} first"
        return replace(decision, reason=f"{decision.reason}; {first}")
    return decision


def _towards_stop(decision: Decision, *, rule: Rule, now: datetime) -> Decision:
    """A stopping rule: warn when the stop is due within the lead time, stop once the notice
    is served, and hold the stop while a snooze is in force."""
    notice, lead = decision.notice, rule.notice.warn_before
    snoozed = notice.snoozed_until is not None
    shown = _snoozed(decision) if snoozed and decision.state is State.IDLE else decision
    if notice.warned_at is not None and notice.stop_at is not None:
        # A warning given keeps its promise whatever the lead is now (0 included).
        if snoozed or decision.action not in STOP_DUE:
            return shown
        return _warned(decision, warned_at=notice.warned_at, stop_at=notice.stop_at, now=now)
    due = _due(decision, reclaim=rule.reclaim, now=now)
    if due is None or lead <= NO_LEAD or due - now > lead:
        return shown  # nothing ahead, no warning stage, or not yet: a snooze still holds
    stop_at = max(due, now + lead)
    ahead = format_duration(lead, split="always")
    why = f"warning: stop planned at {time_text(stop_at)} ({ahead} notice)"
    return _warn(shown, stop_at=stop_at, now=now, why=why)


def _due(decision: Decision, *, reclaim: Reclaim, now: datetime) -> datetime | None:
    """When the stop would come (a snooze pushes it to the snooze's end); None when no stop
    lies ahead: a held state, or a when-contended workload nobody waits for."""
    if decision.action in STOP_DUE:
        base = now
    elif (
        decision.state is State.IDLE
        and decision.action is Action.NONE
        and reclaim is Reclaim.ALWAYS
        and decision.time_left is not None
    ):
        base = now + decision.time_left
    else:
        return None
    snoozed_until = decision.notice.snoozed_until
    return max(base, snoozed_until) if snoozed_until is not None else base


def _warned(
    decision: Decision, *, warned_at: datetime, stop_at: datetime, now: datetime
) -> Decision:
    """Warned in time: the stop goes ahead once the notice is served, and waits until then."""
    served = f"warned at {time_text(warned_at)}, stop planned at {time_text(stop_at)}"
    if now >= stop_at:
        return replace(decision, reason=f"{decision.reason}; {served}")
    return replace(decision, action=Action.NONE, reason=f"{decision.reason}; {served}: waits")


def _snoozed(decision: Decision) -> Decision:
    notice = decision.notice
    until = time_text(notice.snoozed_until) if notice.snoozed_until is not None else "?"
    by = notice.snoozed_by or "unknown"
    return replace(
        decision,
        state=State.SNOOZED,
        action=Action.NONE,
        reason=f"{decision.reason}; snoozed until {until} by {by}",
    )


def _warn(decision: Decision, *, stop_at: datetime | None, now: datetime, why: str) -> Decision:
    """WARN: the engine writes WARNED_AT (now, to the second, as annotations keep it) and
    STOP_PLANNED_AT (the promise, rounded up to the second so that writing it never brings it
    forward), and tells people; the notice already shows both."""
    promised = promise_time(stop_at) if stop_at is not None else None
    notice = replace(decision.notice, warned_at=now.replace(microsecond=0), stop_at=promised)
    return replace(decision, action=Action.WARN, notice=notice, reason=f"{decision.reason}; {why}")
