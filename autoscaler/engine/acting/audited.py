"""The audited writer, at act time: the fresh check right before the stops, and the durable
audit record written before a stop or a deletion.

The fresh check re-reads every candidate's newest samples in one query (the act context's
metric source): a candidate busy, in use again or unknown now is left alone. Then no record,
no write: each stop or deletion writes its record first (`started`). A write that succeeded
settles that record to `done` (the runtime state replaces the word in place); one that did
not plainly succeed gets its outcome added beside the record, so the hourly cap and the
breaker (the cycle's screen, `engine/cycle/screen.py`) count it right. A deactivation whose
answer was lost is settled on a later cycle from the Workload itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from autoscaler.core.errors import ClusterError
from autoscaler.domain.audit.subjects import subject_of
from autoscaler.domain.guards.screen import Deed, LoopRecord
from autoscaler.domain.models import Action, Decision, WorkloadInfo, WorkloadRef
from autoscaler.domain.outcomes import Outcome
from autoscaler.domain.usage.fresh import pods_of, still_idle
from autoscaler.engine.acting.context import ActContext

DEEDS = {Action.DELETE: Deed.DELETE, Action.MARK: Deed.MARK, Action.UNMARK: Deed.UNMARK}


def fresh_check(
    context: ActContext,
    workloads: Sequence[WorkloadInfo],
    checked: Sequence[Decision],
    *,
    now: datetime,
) -> dict[WorkloadRef, str]:
    """Why each workload of the `checked` decisions must be left alone after all (busy, in
    use again or unknown now); one query. Each is judged under its decision's rule (its
    threshold and staleness), new loading counting until its `loading_counts_until`."""
    by_ref = {d.workload: d for d in checked}
    candidates = [w for w in workloads if w.ref in by_ref]
    if not candidates:
        return {}
    latest = context.metrics.read_latest(pods_of(candidates), now=now)
    found = {}
    for w in candidates:
        decision = by_ref[w.ref]
        rules = decision.rule.usage
        found[w.ref] = still_idle(
            w,
            latest,
            threshold=rules.threshold,
            stale_after=rules.stale_after,
            now=now,
            loading_counts_until=decision.loading_counts_until,
        )
    return {ref: why for ref, why in found.items() if why is not None}


def audited_write(
    context: ActContext,
    workload: WorkloadInfo,
    decision: Decision,
    *,
    now: datetime,
    write: Callable[[], Outcome],
) -> tuple[Outcome, bool]:
    """The write's outcome, and whether its durable record was written. The record carries
    the workload as it stood (rule, queues, owner, waiter). A replica that no longer leads
    (its Lease lost mid-cycle) writes neither: skipped."""
    if not context.leads():
        return Outcome.skipped("no longer the leader"), False
    begun = _deed(context, decision, now=now, outcome=None)
    try:
        context.audit.record(replace(begun, subject=subject_of(workload, decision)))
    except ClusterError as exc:  # no durable record, no write
        return Outcome.failed(f"audit record not written: {exc}"), False
    outcome = write()
    _record_outcome(context, decision, now=now, outcome=outcome)
    return outcome, True


def _record_outcome(
    context: ActContext, decision: Decision, *, now: datetime, outcome: Outcome
) -> None:
    """How the write after the record went (same time): done settles the begun record; a
    failed one is not taken for a deactivation someone undid, and a lost answer gets settled.
    A follow-up not written leaves the record `started`, which the guards count the same."""
    try:
        context.audit.record(_deed(context, decision, now=now, outcome=outcome))
    except ClusterError as exc:
        context.logger.warning("audit record of an action's outcome not written: %s", exc)


def _deed(
    context: ActContext, decision: Decision, *, now: datetime, outcome: Outcome | None
) -> LoopRecord:
    return LoopRecord(
        at=now,
        deed=DEEDS.get(decision.action, Deed.DEACTIVATE),
        workload=decision.workload,
        reason=decision.reason,
        outcome=outcome,
        gpus=decision.gpus,
        peak=decision.peak,
        coverage=decision.coverage,
        threshold=decision.rule.usage.threshold,
    )
