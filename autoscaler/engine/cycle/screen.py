"""The guards in the reconcile pass: what may be acted on, and the records written first.

Each cycle `screen` observes the fleet for the circuit breaker, counts undone deactivations
(marking a workload contested when it keeps happening), and applies contested marks, the
breaker and the hourly cap to the decisions. Right before acting, `fresh_check` re-reads the
candidates' newest samples in one query, and `begin` writes each action's durable audit
record before its patch (`ended` adds the outcome when the patch was not plainly done). A
deactivation whose answer was lost is settled on a later cycle from the Workload itself.

Guard state that cannot be read makes the cycle act on nothing: a guard that cannot look
must not be taken for one that found nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import AuditLog, GuardState, MetricSource
from autoscaler.domain.audit.subjects import Subject
from autoscaler.domain.guards.breaker import BreakerState, Turnover, step
from autoscaler.domain.guards.caps import NOTHING_AT_ALL, WARNINGS, defer, hold
from autoscaler.domain.guards.screen import (
    HOUR,
    Contest,
    Deed,
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
    WorkloadRef,
)
from autoscaler.domain.outcomes import Outcome
from autoscaler.domain.policy.decisions import Policy, Usage
from autoscaler.domain.policy.rules import Rule
from autoscaler.domain.usage.fresh import pods_of, still_idle
from autoscaler.engine.cycle.fleet_watch import FleetWatch

HELD = "warning held: breaker open"  # a glitch that makes everything look idle warns nobody


@dataclass(frozen=True)
class Screened:
    decisions: tuple[Decision, ...]
    report: GuardReport


class Guards:
    def __init__(
        self,
        *,
        rules: GuardRules,
        policy: Policy,
        audit: AuditLog,
        state: GuardState,
        metrics: MetricSource,
        interval: timedelta,
        logger: logging.Logger,
    ) -> None:
        self._rules = rules
        self._policy = policy
        self._audit = audit
        self._state = state
        self._metrics = metrics
        self._log = logger
        self._watch = FleetWatch(policy=policy, metrics=metrics, interval=interval, logger=logger)
        self._known = GuardMemory()  # the last memory read, reported when a read fails

    def screen(
        self,
        workloads: Sequence[WorkloadInfo],
        usage: Usage,
        decisions: Sequence[Decision],
        *,
        now: datetime,
        leading: bool = True,
    ) -> Screened:
        """`leading`: this replica acts, so it also writes the guards' state and Events;
        another replica computes the same view without writing (and keeps a warm baseline)."""
        seen = self._watch.observe(workloads, decisions, usage, now=now)
        try:
            memory = self._state.load()
            records = list(self._audit.recent(now - max(self._rules.contested.span, HOUR)))
        except ClusterError as exc:
            return self._blind(decisions, f"guard state unreadable, nothing acted: {exc}")
        records = self._settle(workloads, records, leading=leading)
        memory = self._step_breaker(memory, seen, now=now, leading=leading)
        memory, records = self._contest(workloads, records, memory, now=now, leading=leading)
        return self._apply(decisions, memory, records, now=now)

    def fresh_check(
        self,
        candidates: Sequence[WorkloadInfo],
        *,
        now: datetime,
        rule_of: Mapping[WorkloadRef, Rule],
        loading_until: Mapping[WorkloadRef, datetime | None] | None = None,
    ) -> dict[WorkloadRef, str]:
        """Why each candidate must be left alone after all (busy, in use again or unknown
        now); one query. `rule_of` is each candidate's rule (its decision's), whose threshold
        and staleness judge it; `loading_until`, until when new loading still counts for it
        (its decision's `loading_counts_until`)."""
        if not candidates:
            return {}
        latest = self._metrics.read_latest(pods_of(candidates), now=now)
        found = {}
        for w in candidates:
            rules = rule_of[w.ref].usage
            found[w.ref] = still_idle(
                w,
                latest,
                threshold=rules.threshold,
                stale_after=rules.stale_after,
                now=now,
                loading_counts_until=(loading_until or {}).get(w.ref),
            )
        return {ref: why for ref, why in found.items() if why is not None}

    def begin(self, decision: Decision, *, now: datetime, subject: Subject | None = None) -> None:
        """The durable record of a deactivation, before its patch, with the workload as it
        stood (`subject`: rule, queues, owner, waiter). Raises ClusterError."""
        self._audit.record(replace(self._deed(decision, now=now, outcome=None), subject=subject))

    def ended(self, decision: Decision, *, now: datetime, outcome: Outcome) -> None:
        """The patch after `begin` was not plainly done: say how (same time), so a failed one
        is not taken for a deactivation someone undid, and a lost answer gets settled."""
        try:
            self._audit.record(self._deed(decision, now=now, outcome=outcome))
        except ClusterError as exc:
            self._log.warning("audit record of an action's outcome not written: %s", exc)

    def _settle(
        self, workloads: Sequence[WorkloadInfo], records: list[LoopRecord], *, leading: bool
    ) -> list[LoopRecord]:
        """Settle deactivations whose answer was lost, from the Workloads as read now."""
        settled = settle_lost_answers(workloads, records)
        for record in settled:
            self._log.warning(
                "deactivate %s at %s, answer lost: %s", record.workload, record.at, record.outcome
            )
        if settled and leading:
            try:
                self._audit.record(*settled)
            except ClusterError as exc:  # settled again next cycle
                self._log.warning("settled outcome not recorded: %s", exc)
        return [*settled, *records]

    def _step_breaker(
        self, memory: GuardMemory, seen: Turnover, *, now: datetime, leading: bool
    ) -> GuardMemory:
        rules = self._rules.breaker
        if step(memory.breaker, seen, rules=rules, now=now) == memory.breaker:
            return memory

        def stepped(current: GuardMemory) -> GuardMemory:  # redone on the state as written
            return replace(current, breaker=step(current.breaker, seen, rules=rules, now=now))

        saved = self._keep(memory, stepped, records=(), leading=leading)
        if leading:
            self._announce(memory.breaker, saved.breaker)
        return saved

    def _keep(
        self,
        memory: GuardMemory,
        edit: Callable[[GuardMemory], GuardMemory],
        *,
        records: Sequence[LoopRecord],
        leading: bool,
    ) -> GuardMemory:
        """Write the edit and its records when leading; honour it this cycle all the same."""
        if not leading:
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
        leading: bool,
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

        memory = self._keep(memory, marked, records=(*undone, *marks), leading=leading)
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
            why = f"mass-idle circuit breaker open: {memory.breaker.reason}"
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

    def _deed(self, decision: Decision, *, now: datetime, outcome: Outcome | None) -> LoopRecord:
        return LoopRecord(
            at=now,
            deed=Deed.DELETE if decision.action is Action.DELETE else Deed.DEACTIVATE,
            workload=decision.workload,
            reason=decision.reason,
            outcome=outcome,
            gpus=decision.gpus,
            peak=decision.peak,
            coverage=decision.coverage,
            threshold=decision.rule.usage.threshold,
        )


def _deferred(before: Sequence[Decision], after: Sequence[Decision]) -> int:
    return sum(
        1
        for old, new in zip(before, after, strict=True)
        if new.action is Action.DEFERRED and old.action is not Action.DEFERRED
    )
