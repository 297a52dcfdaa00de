"""A write that must leave a durable audit record first: a deactivation or a deletion.

No record, no write. A write that did not plainly succeed gets its outcome added to the
record, so the hourly cap and the breaker count it right. Without guards (unit tests of the
loop alone) the write goes ahead unaudited.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from autoscaler.core.errors import ClusterError
from autoscaler.domain.audit.subjects import subject_of
from autoscaler.domain.models import Decision, WorkloadInfo
from autoscaler.domain.outcomes import Outcome, OutcomeKind
from autoscaler.engine.cycle.screen import Guards


def audited_write(
    guards: Guards | None,
    workload: WorkloadInfo,
    decision: Decision,
    *,
    now: datetime,
    write: Callable[[], Outcome],
) -> tuple[Outcome, bool]:
    """The write's outcome, and whether its durable record was written."""
    if guards is None:
        return write(), False
    try:
        guards.begin(decision, now=now, subject=subject_of(workload, decision))
    except ClusterError as exc:  # no durable record, no write
        return Outcome.failed(f"audit record not written: {exc}"), False
    outcome = write()
    if outcome.kind is not OutcomeKind.DONE:
        guards.ended(decision, now=now, outcome=outcome)
    return outcome, True
