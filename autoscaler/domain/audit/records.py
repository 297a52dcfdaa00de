"""The records kept in the runtime-state ConfigMap (pauses with who set them, the audit trail,
the guards' memory) and the edits on them: plain values, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from autoscaler.domain.audit.subjects import Subject
from autoscaler.domain.guards.breaker import CLOSED, BreakerState
from autoscaler.domain.guards.screen import Contest
from autoscaler.domain.models import Pauses, WorkloadRef

EVERYTHING = "*"  # the scope of a whole-service pause in `pause-details`


LOOP_ACTOR = "idle-gpu-autoscaler"  # the actor of the loop's own audit records
BEGUN = "started"  # a loop's record written before its patch: the deed begun
DONE = "done"  # its patch succeeded: the begun record settles to this word in place


@dataclass(frozen=True)
class PauseNote:
    by: str
    reason: str
    at: datetime


@dataclass(frozen=True)
class RecordKey:
    """What makes one of the loop's records the same record again, so a restarted or second
    replica that would write it finds it in the stored trail and leaves it out.

    A decision: the workload's UID and the start of its idle episode (`Decision.idle_since`),
    plus the outcome of an action. A cut exemption: the workload's UID and what was cut.
    """

    subject: str  # the workload's UID
    episode: datetime | None = None  # when its idle episode began
    detail: str = ""

    def covers(self, earlier: RecordKey, *, recorded_at: datetime) -> bool:
        """Whether a record keyed `earlier`, written at `recorded_at`, is this one again.

        Within one episode "idle since" can move (the last busy sample crosses from slot to
        coarse precision, or leaves the lookback and admission bounds it), so a record made
        at or after the episode's start counts as made in it. Compared to the second: that
        is what the ConfigMap keeps.
        """
        if (earlier.subject, earlier.detail) != (self.subject, self.detail):
            return False
        if self.episode is None:
            return earlier.episode is None
        return _to_second(recorded_at) >= _to_second(self.episode)


def _to_second(moment: datetime) -> datetime:
    return moment.replace(microsecond=0)


@dataclass(frozen=True)
class AuditRecord:
    """One change or action: the loop's deactivations and everything done through the API."""

    at: datetime
    actor: str  # a Kubernetes username, or "idle-gpu-autoscaler" for the loop
    action: str  # exempt, unexempt, pause, resume, reactivate, deactivate, would-deactivate, ...
    target: str  # "team-a/raycluster-x-1a2b3", "namespace team-a" or "service"
    reason: str
    outcome: str = DONE
    namespace: str | None = None
    gpus: int | None = None
    peak: float | None = None  # observed peak utilization ratio, when the loop acted
    coverage: float | None = None
    threshold: float | None = None
    key: RecordKey | None = None  # the loop's records: written once (a deactivation never)
    subject: Subject | None = None  # the workload as it stood: rule, queues, owner, waiter

    def settles(self, begun: AuditRecord) -> bool:
        """Whether this is the plain `done` that ends `begun`, the loop's record of the same
        deed on the same target at the same time (to the second, as the ConfigMap keeps
        it) written before its patch. Only a plain `done`: a lost answer's settlement
        (`done: confirmed: ...`) and a failure stay rows of their own, which the guards
        read beside the begun record."""
        return (
            self.outcome == DONE
            and begun.outcome == BEGUN
            and (self.actor, self.action, self.target) == (begun.actor, begun.action, begun.target)
            and _to_second(self.at) == _to_second(begun.at)
        )

    def repeats(self, earlier: AuditRecord) -> bool:
        """Whether `earlier` already records what this record says."""
        if self.key is None or earlier.key is None or earlier.action != self.action:
            return False
        return self.key.covers(earlier.key, recorded_at=earlier.at)


@dataclass(frozen=True)
class RuntimeState:
    pauses: Pauses = field(default_factory=Pauses)
    notes: Mapping[str, PauseNote] = field(default_factory=dict)
    audit: tuple[AuditRecord, ...] = ()
    breaker: BreakerState = CLOSED
    contested: Mapping[WorkloadRef, Contest] = field(default_factory=dict)

    def paused(self, scope: str, note: PauseNote) -> RuntimeState:
        """Pause the whole service (`EVERYTHING`) or one namespace."""
        pauses = (
            replace(self.pauses, everything=True)
            if scope == EVERYTHING
            else replace(self.pauses, namespaces=self.pauses.namespaces | {scope})
        )
        return replace(self, pauses=pauses, notes={**self.notes, scope: note})

    def resumed(self, scope: str) -> RuntimeState:
        pauses = (
            replace(self.pauses, everything=False)
            if scope == EVERYTHING
            else replace(self.pauses, namespaces=self.pauses.namespaces - {scope})
        )
        notes = {key: note for key, note in self.notes.items() if key != scope}
        return replace(self, pauses=pauses, notes=notes)

    def recorded(self, records: tuple[AuditRecord, ...], *, limit: int) -> RuntimeState:
        """Add the records, but not a keyed one already in the trail: checked here, inside
        the read-modify-write, so replicas and restarts never record one decision twice. A
        plain `done` that settles a begun record (`settles`) replaces its `started` instead
        of adding a row: the stop reads `done` in the audit."""
        fresh: list[AuditRecord] = []
        trail = list(self.audit)
        for record in records:
            if any(record.repeats(earlier) for earlier in (*fresh, *trail)):
                continue
            if not _settle(record, fresh) and not _settle(record, trail):
                fresh.append(record)
        newest_first = tuple(sorted(fresh, key=lambda r: r.at, reverse=True))
        return replace(self, audit=(newest_first + tuple(trail))[:limit])

    def breaker_reset(self) -> RuntimeState:
        return replace(self, breaker=CLOSED)

    def uncontested(self, ref: WorkloadRef) -> RuntimeState:
        return replace(self, contested={k: v for k, v in self.contested.items() if k != ref})


def _settle(record: AuditRecord, records: list[AuditRecord]) -> bool:
    """Settle the begun record `record` ends, in place in `records`; False when none is there."""
    for index, begun in enumerate(records):
        if record.settles(begun):
            records[index] = replace(begun, outcome=record.outcome)
            return True
    return False


Edit = Callable[[RuntimeState], RuntimeState]


@dataclass(frozen=True)
class Annotated:
    """The object a write landed on, for answers and audit records."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"
