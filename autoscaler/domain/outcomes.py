"""How an action went, as a type: the loop branches on the kind, never on a string's prefix.

`unknown` is its own kind: a patch whose answer was lost may have been applied, so it counts
as begun (the hourly cap, undo counting) until the object itself says whether it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class OutcomeKind(StrEnum):
    DONE = "done"
    SKIPPED = "skipped"  # not attempted, or refused in a way the next cycle retries
    FAILED = "failed"  # attempted and refused: nothing changed
    UNKNOWN = "unknown"  # attempted, the answer was lost: it may have been applied


@dataclass(frozen=True)
class Outcome:
    kind: OutcomeKind
    detail: str = ""

    @classmethod
    def done(cls, detail: str = "") -> Outcome:
        return cls(OutcomeKind.DONE, detail)

    @classmethod
    def skipped(cls, detail: str) -> Outcome:
        return cls(OutcomeKind.SKIPPED, detail)

    @classmethod
    def failed(cls, detail: str) -> Outcome:
        return cls(OutcomeKind.FAILED, detail)

    @classmethod
    def unknown(cls, detail: str) -> Outcome:
        return cls(OutcomeKind.UNKNOWN, detail)

    @property
    def went_wrong(self) -> bool:
        """Failed, or not known to have worked: worth a warning and the errors metric."""
        return self.kind in (OutcomeKind.FAILED, OutcomeKind.UNKNOWN)

    def __str__(self) -> str:
        """The words logs, the REST API and the audit trail show: `done`, `failed: …`."""
        return f"{self.kind.value}: {self.detail}" if self.detail else self.kind.value
