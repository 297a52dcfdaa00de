"""The cycle's screen: what of a cycle's decisions may be acted on.

Each cycle `screen` observes the fleet for the circuit breaker, settles deactivations whose
answer was lost from the Workloads as read, counts undone deactivations (marking a workload
contested when it keeps happening), and applies contested marks, the breaker and the hourly
cap to the decisions. The act-time half of the guards, the fresh check and the durable
record written before each stop or deletion, is the audited writer (`engine/acting/audited.py`).

Guard state that cannot be read makes the cycle act on nothing: a guard that cannot look
must not be taken for one that found nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import AuditLog, GuardState
from autoscaler.domain.guards.breaker import BreakerState, Turnover, step
from autoscaler.domain.guards.caps import NOTHING_AT_ALL, WARNINGS, defer, hold
from autoscaler.domain.guards.screen import (
    HOUR,
    Contest,
    GuardMemory,
    GuardRules,
    LoopRecord,
    leave_contested,
    newly_contested,
    newly_undone,
    settle_lost_answers,
    started_in_last_hour,
)
from autoscaler.domain.models import (
    Action,
    Decision,
    GuardReport,
    WorkloadInfo,
)
from autoscaler.domain.policy.decisions import Usage
from autoscaler.engine.cycle.fleet_watch import FleetWatch

HELD = "warning held: breaker open"  # a glitch that makes everything look idle warns nobody


@dataclass(frozen=True)
class Screened:
    decisions: tuple[Decision, ...]
    report: GuardReport


class Screen:
    def __init__(
        self,
        *,
        rules: GuardRules,
        audit: AuditLog,
        state: GuardState,
        watch: FleetWatch,
        logger: logging.Logger,
    ) -> None:
        """`audit`: the trail the hourly cap and the contested marks count from (the audited
        writer's records); `watch`: the busy workloads the breaker compares each cycle with."""
        self._rules = rules
        self._audit = audit
        self._state = state
        self._watch = watch
        self._log = logger
        self._known = GuardMemory()  # the last memory read, reported when a read fails

    def screen(
        self,
        workloads: Sequence[WorkloadInfo],
        usage: Usage,
        decisions: Sequence[Decision],
        *,
        now: datetime,
        leads: bool,
    ) -> Screened:
        """`leads`: this replica acts, so it also writes the guards' state and Events;
        another replica computes the same view without writing (and keeps a warm baseline)."""
        seen = self._watch.observe(workloads, decisions, usage, now=now)
        try:
            memory = self._state.load()
            records = list(self._audit.recent(now - max(self._rules.contested.span, HOUR)))
        except ClusterError as exc:
            return self._blind(decisions, f"guard state unreadable, nothing acted: {exc}")
        records = self._settle(workloads, records, leads=leads)
        memory = self._step_breaker(memory, seen, now=now, leads=leads)
        memory, records = self._contest(workloads, records, memory, now=now, leads=leads)
        return self._apply(decisions, memory, records, now=now)

    def _settle(
        self, workloads: Sequence[WorkloadInfo], records: list[LoopRecord], *, leads: bool
    ) -> list[LoopRecord]:
        """Settle deactivations whose answer was lost, from the Workloads as read now."""
        settled = settle_lost_answers(workloads, records)
        for record in settled:
            self._log.warning(
                "deactivate %s at %s, answer lost: %s", record.workload, record.at, record.outcome
            )
        if settled and leads:
            try:
                self._audit.record(*settled)
            except ClusterError as exc:  # settled again next cycle
                self._log.warning("settled outcome not recorded: %s", exc)
        return [*settled, *records]

    def _step_breaker(
        self, memory: GuardMemory, seen: Turnover, *, now: datetime, leads: bool
    ) -> GuardMemory:
        rules = self._rules.breaker
        if step(memory.breaker, seen, rules=rules, now=now) == memory.breaker:
            return memory

        def stepped(current: GuardMemory) -> GuardMemory:  # redone on the state as written
            return replace(current, breaker=step(current.breaker, seen, rules=rules, now=now))

        saved = self._keep(memory, stepped, records=(), leads=leads)
        if leads:
            self._announce(memory.breaker, saved.breaker)
        return saved

    def _keep(
        self,
        memory: GuardMemory,
        edit: Callable[[GuardMemory], GuardMemory],
        *,
        records: Sequence[LoopRecord],
        leads: bool,
    ) -> GuardMemory:
        """Write the edit and its records when leading; honour it this cycle all the same."""
        if not leads:
            return edit(memory)
        try:
            return self._state.change(edit, records=records)
        except ClusterError as exc:  # undos are counted again next cycle
            self._log.warning("guard state not saved: %s", exc)
            return edit(memory)

    def _announce(self, before: BreakerState, after: BreakerState) -> None:
        if after.open and not before.open:
            reason = "MassIdleBreakerOpened"
            message = (
                f"Deactivations stopped: {after.reason}. It closes after "
                f"{self._rules.breaker.close_after} consecutive normal cycles, or when an "
                "admin resets it (POST /api/v1/breaker/reset)."
            )
        elif before.open and not after.open:
            reason = "MassIdleBreakerClosed"
            message = "Deactivations resume: the fleet looked normal for long enough."
        else:
            self._log.info("breaker open, %d normal cycles in a row", after.normal_cycles)
            return
        self._log.warning("%s: %s", reason, message)
        try:
            self._state.announce(reason=reason, message=message)
        except ClusterError as exc:  # the state is saved; a missing Event is only reported
            self._log.warning("event %s not written: %s", reason, exc)

    def _contest(
        self,
        workloads: Sequence[WorkloadInfo],
        records: list[LoopRecord],
        memory: GuardMemory,
        *,
        now: datetime,
        leads: bool,
    ) -> tuple[GuardMemory, list[LoopRecord]]:
        rules = self._rules.contested
        undone = newly_undone(workloads, records, rules=rules, now=now)
        records = [*undone, *records]
        marks = newly_contested(records, memory.contested, rules=rules, now=now)
        if not undone and not marks:
            return memory, records
        for record in (*undone, *marks):
            self._log.warning("%s %s: %s", record.deed.value, record.workload, record.reason)
        new = {r.workload: Contest(since=r.at, reason=r.reason) for r in marks}

        def marked(current: GuardMemory) -> GuardMemory:
            return replace(current, contested={**current.contested, **new})

        memory = self._keep(memory, marked, records=(*undone, *marks), leads=leads)
        return memory, [*marks, *records]

    def _apply(
        self,
        decisions: Sequence[Decision],
        memory: GuardMemory,
        records: Sequence[LoopRecord],
        *,
        now: datetime,
    ) -> Screened:
        self._known = memory
        guarded = leave_contested(decisions, memory.contested)
        if memory.breaker.open:
            # in every tenant's rows: the counts, never the names of other tenants' workloads
            summary = memory.breaker.summary
            why = "mass-idle circuit breaker open" + (f": {summary}" if summary else "")
            guarded = hold(defer(guarded, keep=0, why=why), actions=WARNINGS, why=HELD)
        begun, limit = started_in_last_hour(records, now=now), self._rules.max_per_hour
        why = f"at most {limit} deactivations per hour ({begun} begun in the last hour)"
        guarded = defer(guarded, keep=limit - begun, why=why)
        report = self._report(memory, begun=begun, deferred=_deferred(decisions, guarded))
        return Screened(guarded, report)

    def _blind(self, decisions: Sequence[Decision], problem: str) -> Screened:
        self._log.error("%s", problem)
        guarded = hold(defer(decisions, keep=0, why=problem), actions=NOTHING_AT_ALL, why=problem)
        report = self._report(self._known, begun=0, deferred=_deferred(decisions, guarded))
        return Screened(guarded, replace(report, problems=(problem,)))

    def _report(self, memory: GuardMemory, *, begun: int, deferred: int) -> GuardReport:
        return GuardReport(
            breaker=memory.breaker,
            breaker_close_after=self._rules.breaker.close_after,
            hourly_limit=self._rules.max_per_hour,
            deactivations_last_hour=begun,
            deferred=deferred,
            contested=tuple(sorted(memory.contested)),
        )


def _deferred(before: Sequence[Decision], after: Sequence[Decision]) -> int:
    return sum(
        1
        for old, new in zip(before, after, strict=True)
        if new.action is Action.DEFERRED and old.action is not Action.DEFERRED
    )
