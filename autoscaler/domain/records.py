"""The records kept in the runtime-state ConfigMap (pauses with who set them, the audit trail,
the guards' memory) and the edits on them: plain values, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from autoscaler.domain.breaker import CLOSED, BreakerState
from autoscaler.domain.guards import Contest
from autoscaler.domain.models import Pauses, WorkloadRef

EVERYTHING = "*"  # the scope of a whole-service pause in `pause-details`


LOOP_ACTOR = "idle-gpu-autoscaler"  # the actor of the loop's own audit records


@dataclass(frozen=True)
class PauseNote:
    by: str
    reason: str
    at: datetime


@dataclass(frozen=True)
class AuditRecord:
    """One change or action: the loop's deactivations and everything done through the API."""

    at: datetime
    actor: str  # a Kubernetes username, or "idle-gpu-autoscaler" for the loop
    action: str  # exempt, unexempt, pause, resume, reactivate, deactivate, would-deactivate, ...
    target: str  # "team-a/raycluster-x-1a2b3", "namespace team-a" or "service"
    reason: str
    outcome: str = "done"
    namespace: str | None = None
    gpus: int | None = None
    peak: float | None = None  # observed peak utilization ratio, when the loop acted
    coverage: float | None = None
    threshold: float | None = None


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
        newest_first = tuple(sorted(records, key=lambda r: r.at, reverse=True))
        return replace(self, audit=(newest_first + self.audit)[:limit])

    def breaker_reset(self) -> RuntimeState:
        return replace(self, breaker=CLOSED)

    def uncontested(self, ref: WorkloadRef) -> RuntimeState:
        return replace(self, contested={k: v for k, v in self.contested.items() if k != ref})


Edit = Callable[[RuntimeState], RuntimeState]


@dataclass(frozen=True)
class Annotated:
    """The object a write landed on, for answers and audit records."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"
