"""The guards' ports (`AuditLog`, `GuardState`) over the runtime-state ConfigMap.

The loop's audit records join the same bounded `audit` list the API writes, so
`GET /api/v1/decisions` shows them; the breaker and the contested marks have keys of their
own. Every write is the store's read-modify-write, redone on 409. Outcomes are kept as the
words people read (`started`, `failed: …`, `unknown: …`) and read back as `Outcome`s, older
records included.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from autoscaler.adapters.state.codec import ref_of
from autoscaler.core.ports import Clock, StateBacking
from autoscaler.domain.audit.records import LOOP_ACTOR, AuditRecord, RuntimeState
from autoscaler.domain.guards.screen import Deed, GuardMemory, LoopRecord
from autoscaler.domain.outcomes import Outcome, OutcomeKind

_DEEDS = {deed.value: deed for deed in Deed}
_KINDS = {kind.value: kind for kind in OutcomeKind}
# The word of a record that is the deed itself (no outcome of its own).
DEED_WORDS = {
    Deed.DEACTIVATE: "started",
    Deed.DELETE: "started",
    Deed.UNDONE: "counted",
    Deed.CONTESTED: "marked",
    Deed.UNCONTESTED: "done",
    Deed.MARK: "started",
    Deed.UNMARK: "started",
}
_LOOP_DEEDS = (
    Deed.DEACTIVATE,
    Deed.DELETE,
    Deed.MARK,
    Deed.UNMARK,
)  # begun by the loop, then maybe a follow-up
# What records written before typed outcomes said for a deactivation that was begun.
_BEGUN_WORDS = ("started", "done")


class RuntimeGuardStore:
    """`AuditLog` and `GuardState` in one: both live in the runtime-state ConfigMap."""

    def __init__(self, *, store: StateBacking, audit_limit: int, clock: Clock) -> None:
        self._store = store
        self._limit = audit_limit
        self._clock = clock

    def record(self, *records: LoopRecord) -> None:
        self._store.record(*(audit_record(r) for r in records))

    def recent(self, since: datetime) -> Sequence[LoopRecord]:
        found = (loop_record(r) for r in self._store.read().audit if r.at >= since)
        return [r for r in found if r is not None]

    def load(self) -> GuardMemory:
        return memory_of(self._store.read())

    def change(
        self, edit: Callable[[GuardMemory], GuardMemory], *, records: Sequence[LoopRecord] = ()
    ) -> GuardMemory:
        audits = tuple(audit_record(r) for r in records)

        def apply(state: RuntimeState) -> RuntimeState:
            wanted = edit(memory_of(state))
            changed = replace(state, breaker=wanted.breaker, contested=dict(wanted.contested))
            return changed.recorded(audits, limit=self._limit) if audits else changed

        return memory_of(self._store.change(apply))

    def announce(self, *, reason: str, message: str) -> None:
        self._store.announce(reason=reason, message=message, now=self._clock.now())


def memory_of(state: RuntimeState) -> GuardMemory:
    return GuardMemory(breaker=state.breaker, contested=state.contested)


def audit_record(record: LoopRecord) -> AuditRecord:
    return AuditRecord(
        at=record.at,
        actor=LOOP_ACTOR,
        action=record.deed.value,
        target=str(record.workload),
        reason=record.reason,
        outcome=DEED_WORDS[record.deed] if record.outcome is None else str(record.outcome),
        namespace=record.workload.namespace,
        gpus=record.gpus,
        peak=record.peak,
        coverage=record.coverage,
        threshold=record.threshold,
        subject=record.subject,
    )


def loop_record(record: AuditRecord) -> LoopRecord | None:
    """The record as the guards count it; None for one they do not count. A deactivation
    counts only when the loop made it (an admin's "deactivate now" is not capped)."""
    deed = _DEEDS.get(record.action)
    if deed is None or (deed in _LOOP_DEEDS and record.actor != LOOP_ACTOR):
        return None
    try:
        workload = ref_of(record.target)
    except ValueError:
        return None
    return LoopRecord(
        at=record.at,
        deed=deed,
        workload=workload,
        reason=record.reason,
        outcome=outcome_of(deed, record.outcome),
        gpus=record.gpus,
        peak=record.peak,
        coverage=record.coverage,
        threshold=record.threshold,
        subject=record.subject,
    )


def outcome_of(deed: Deed, text: str) -> Outcome | None:
    """The typed outcome of a stored record. Only a deactivation's follow-up has one; older
    records wrote "skipped, retried next cycle: …", and any unknown word counts as failed
    (as it did before outcomes were typed)."""
    if deed not in _LOOP_DEEDS or text in _BEGUN_WORDS:
        return None
    word, _, detail = text.partition(":")
    word, _, older = word.partition(",")  # "skipped, retried next cycle"
    kind = _KINDS.get(word.strip())
    if kind is None:
        return Outcome.failed(text)
    detail = f"{older.strip()}: {detail.strip()}" if older else detail.strip()
    return Outcome(kind, detail)
