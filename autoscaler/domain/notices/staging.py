"""The warning stage (ISSUE 15): no stop without a warning given at least `warnBefore` earlier.

Applied to each decision after the policy (`domain/policy/decisions.py`) and the when-contended
reclaim screen, so a contended stop is warned when it is picked, and again in the act step on
the fresh Workload, so a snooze made mid-cycle wins. Pure.

For a rule that stops (`deactivate`, `delete`) with a lead time:
- a stop the policy wants, or one due within the lead time, without a warning that counts, is
  turned into WARN, promising the stop at the due time and never sooner than the lead time;
- with a warning, the stop goes ahead at max(promised time, warned-at + warnBefore) and not
  before; until then the decision waits;
- a snooze in force holds the stop (State.SNOOZED) and is itself warned about ahead of its end;
- busy, loading or idle-held (some of its GPUs are busy: the work is in use, a stop of it
  was never due) clears a warning that counts (ALL_CLEAR);
- not-running (admitted, no GPU pod runs: quota held without work) climbs the same ladder
  as idle, its limit `notRunningAfter` in place of the idle window;
- every other state (unknown, paused, grace, exempt, deferred by a guard, ...) holds the
  warning as it is: no stop, no clear. No data never stops, and never clears either.
A `warn` rule warns once its workload is idle the whole window and never stops. Dry run writes
nothing: no warning is given, the reason says one would be.

The notice is read back from the Workload's annotations, never from memory (`read_notice`), so
a restarted service or a second replica reads the same notice from the same object: the warning
that counts, the snooze in force, and the stop's earliest time. A warning counts only for the
object it was given to (WARNED_UID) and only when written after the workload's latest creation,
admission, reactivation or GPU pod start (`policy.not_before`), and after any exemption made or
in force since (EXEMPT_SET_AT, EXEMPT_UNTIL): an exemption answers the warning as a snooze does.
Anything older is void, and the stage gives a fresh warning when one is due. The deletion stage
(`domain/notices/deletion.py`) reads the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import parse_time, promise_time, time_text
from autoscaler.domain.durations import format_duration
from autoscaler.domain.exemptions import annotation_sources
from autoscaler.domain.models import Action, Decision, State, WorkloadInfo
from autoscaler.domain.notices.notice import Notice
from autoscaler.domain.notices.snoozes import hand_set_snooze
from autoscaler.domain.policy.decisions import not_before
from autoscaler.domain.policy.rules import Reclaim, Rule, RuleAction
from autoscaler.domain.usage.assessment import dated_clock

STOPPING = (RuleAction.DEACTIVATE, RuleAction.DELETE)  # the rule actions that stop
IN_USE = frozenset({State.BUSY, State.LOADING, State.IDLE_HELD})
# GPUs held without use: idle, or admitted with no GPU pod running (quota held without
# work). Both climb the same ladder: warned ahead, snoozed, stopped when due.
HELD = frozenset({State.IDLE, State.NOT_RUNNING})
# The policy's stop, or the stop the per-cycle cap held back: either is due now.
STOP_DUE = frozenset({Action.DEACTIVATE, Action.DEFERRED})
NO_LEAD = timedelta(0)


def stage(
    decision: Decision, workload: WorkloadInfo, *, rule: Rule, dry_run: bool, now: datetime
) -> Decision:
    """The decision with its notice read, and its action turned by the warning stage."""
    staged = replace(decision, notice=read_notice(workload, rule=rule, now=now))
    if staged.state in IN_USE:
        return _in_use(staged, workload, rule=rule, dry_run=dry_run, now=now)
    if rule.action is RuleAction.WARN:
        return _warn_only(staged, dry_run=dry_run, now=now)
    if rule.action not in STOPPING:
        return staged
    if dry_run:
        return _dry_run(staged, lead=rule.notice.warn_before)
    return _towards_stop(staged, rule=rule, now=now)


def _in_use(
    decision: Decision, workload: WorkloadInfo, *, rule: Rule, dry_run: bool, now: datetime
) -> Decision:
    """Busy, loading or idle-held: a warning that counts is cleared; idle-held GPUs are told
    once per admission (not by an observe-only rule, nor in dry run: both write nothing).
    The all-clear says the warning is withdrawn: a warning answered by use is the warning
    working (a slow start the metrics cannot see is warned, then cleared), not a fault."""
    warned_at = decision.notice.warned_at
    if warned_at is not None and not dry_run:
        why = (
            f"{decision.reason}; {decision.state.value} after the warning of "
            f"{dated_clock(warned_at, now=now)}: warning withdrawn, no stop"
        )
        return replace(decision, action=Action.ALL_CLEAR, reason=why)
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
    """A `warn` rule: idle the whole window (or not running past its limit), told once
    (until activity or a snooze answers)."""
    if decision.notice.snoozed_until is not None and decision.state in HELD:
        return _snoozed(decision)
    idle_all_window = decision.state in HELD and decision.time_left == NO_LEAD
    if not idle_all_window or decision.notice.warned_at is not None:
        return decision
    if dry_run:
        return replace(decision, reason=f"{decision.reason}; would warn (dry run)")
    return _warn(decision, stop_at=None, now=now, why="warning, no stop planned")


def _dry_run(decision: Decision, *, lead: timedelta) -> Decision:
    if decision.notice.snoozed_until is not None and decision.state in HELD:
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
    shown = _snoozed(decision) if snoozed and decision.state in HELD else decision
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
        decision.state in HELD
        and decision.action is Action.NONE
        and reclaim in (Reclaim.ALWAYS, Reclaim.VIA_KUEUE)  # the mark comes as a stop would
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


@dataclass(frozen=True)
class Warned:
    """A warning that counts: when it was written and the stop it promised."""

    at: datetime
    promised: datetime | None  # STOP_PLANNED_AT as written; None when missing or unreadable

    def stop_at(self, *, warn_before: timedelta) -> datetime:
        """The promise kept, and never less notice than the rule asks now (a raised
        warnBefore pushes the stop; a lowered one never brings it forward)."""
        least = self.at + warn_before
        return max(self.promised, least) if self.promised is not None else least


@dataclass(frozen=True)
class Snoozed:
    until: datetime
    by: str


def read_notice(workload: WorkloadInfo, *, rule: Rule, now: datetime) -> Notice:
    """The workload's warning, snooze and planned stop, as its annotations say at `now`.
    A warn-only (or observe) rule plans no stop, so its notice has no stop time."""
    warned = valid_warning(workload)
    snoozed = snooze_in_force(workload, rule=rule, now=now)
    stops = warned is not None and rule.action in STOPPING
    return Notice(
        warned_at=warned.at if warned is not None else None,
        stop_at=warned.stop_at(warn_before=rule.notice.warn_before)
        if warned is not None and stops
        else None,
        snoozed_until=snoozed.until if snoozed is not None else None,
        snoozed_by=snoozed.by if snoozed is not None else None,
    )


def valid_warning(workload: WorkloadInfo) -> Warned | None:
    """The Workload's warning when it counts; None when absent or void."""
    written = workload.annotations
    at = parse_time(written.get(keys.WARNED_AT, ""))
    if at is None or written.get(keys.WARNED_UID) != workload.uid:
        return None
    if at <= warnings_count_after(workload):
        return None
    return Warned(at=at, promised=parse_time(written.get(keys.STOP_PLANNED_AT, "")))


def warnings_count_after(workload: WorkloadInfo) -> datetime:
    """A warning written at or before this time belongs to an earlier life of the workload,
    or was answered by an exemption: one made through the API after it (EXEMPT_SET_AT), or
    one in force after it, however it was set (its EXEMPT_UNTIL is later: a hand-set
    `exempt-until` on the RayCluster leaves no other trace once it has run out)."""
    exempted = (  # an owner's value its Workload replaced (a bound) counts no more
        parse_time(source.get(key, ""))
        for _, source in annotation_sources(workload)
        for key in (keys.EXEMPT_SET_AT, keys.EXEMPT_UNTIL)
    )
    return max([not_before(workload), *(t for t in exempted if t is not None)])


def snooze_in_force(workload: WorkloadInfo, *, rule: Rule, now: datetime) -> Snoozed | None:
    """The snooze holding the workload at `now`. A hand-set one counts as the bounds let it
    (clipped, or nothing when refused) even before the engine writes the bounded value."""
    written = workload.annotations
    by = written.get(keys.SNOOZED_BY) or "unknown"
    hand_set = hand_set_snooze(workload, bounds=rule.notice.snooze, now=now)
    if hand_set is not None:
        return Snoozed(hand_set.until, by) if hand_set.until is not None else None
    until = parse_time(written.get(keys.SNOOZED_UNTIL, ""))
    return Snoozed(until, by) if until is not None and until > now else None


def idle_held_told(workload: WorkloadInfo) -> bool:
    """People were told about this admission's idle-held GPUs already."""
    told = parse_time(workload.annotations.get(keys.IDLE_HELD_NOTIFIED_AT, ""))
    return told is not None and told > not_before(workload)
