"""The loop's part of the audit trail, written from each published snapshot by the leader.

Records every action the cycle attempted (with the observed peak, coverage and threshold):
deactivations, and the warning stage's warnings, all-clears, idle-held notices, deletion
warnings and deletions (ISSUE 15), unless the loop already wrote its record before the
request (`ActionRecord.audited`); and, in dry-run, each "would deactivate" or "would delete"
decision once per idle episode, so an admin can judge the policy before letting it act.

Each record carries a `RecordKey` (the workload's UID and the start of its idle episode), and
the runtime-state store leaves out one already in the trail inside its read-modify-write: a
second replica or a restart never records the same decision twice. This process also remembers
what it wrote, only to spare the request, and so that a record that aged out of the bounded
trail is not written again while the workload stays idle.
"""

from __future__ import annotations

import logging
from datetime import datetime

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import AuditSink
from autoscaler.domain.annotations import time_text
from autoscaler.domain.audit.records import LOOP_ACTOR, AuditRecord, RecordKey
from autoscaler.domain.audit.subjects import subject_of
from autoscaler.domain.models import (
    DEFAULT_PROFILE,
    Action,
    ActionRecord,
    Decision,
    Snapshot,
    WorkloadRef,
    WorkloadStatus,
)
from autoscaler.engine.acting.context import Leads, always_leads
from autoscaler.engine.metrics.telemetry import ServiceMetrics
from autoscaler.engine.notify.notices import NOTICE_ACTIONS

DRY_RUN_OUTCOME = "dry-run: not patched"
DRY_RUN_ACTIONS = (Action.WOULD_DEACTIVATE, Action.WOULD_DELETE)


class LoopAuditor:
    def __init__(
        self,
        *,
        audit: AuditSink,
        metrics: ServiceMetrics,
        logger: logging.Logger,
        leads: Leads = always_leads,
    ) -> None:
        """`leads`: only the leader writes the loop's records; a follower writes nothing."""
        self._audit = audit
        self._metrics = metrics
        self._log = logger
        self._leads = leads
        self._written: set[tuple[str, RecordKey]] = set()  # keyed records this process wrote

    def __call__(self, snapshot: Snapshot) -> None:
        if not self._leads():
            return
        found = self._actions(snapshot) + self._dry_run_candidates(snapshot)
        records = [r for r in found if r.key is None or (r.action, r.key) not in self._written]
        if records:
            try:
                self._audit.record(*records)
            except ClusterError as exc:
                self._log.warning("audit records of cycle %d not written: %s", snapshot.cycle, exc)
                self._metrics.error("runtime-state")
                return
        self._remember(records, snapshot)

    def _remember(self, written: list[AuditRecord], snapshot: Snapshot) -> None:
        """Keep the keys of workloads still in the fleet: the set never outgrows it."""
        self._written |= {(r.action, r.key) for r in written if r.key is not None}
        if snapshot.cluster_ok:
            present = {row.info.uid for row in snapshot.workloads}
            self._written = {entry for entry in self._written if entry[1].subject in present}

    def _actions(self, snapshot: Snapshot) -> list[AuditRecord]:
        threshold = _threshold(snapshot)
        records = []
        for action in snapshot.actions:
            if action.audited:
                continue  # the loop wrote its durable record before the patch
            outcome, row = str(action.outcome), snapshot.find(action.workload)
            records.append(
                _record(
                    row,
                    action.workload,
                    action=action.action.value,
                    reason=action.reason,
                    outcome=outcome,
                    threshold=threshold,
                    at=action.at,
                    detail=_detail(action, row, outcome),
                )
            )
        return records

    def _dry_run_candidates(self, snapshot: Snapshot) -> list[AuditRecord]:
        if not snapshot.cluster_ok:
            return []
        threshold = _threshold(snapshot)
        return [
            _record(
                row,
                row.ref,
                action=row.decision.action.value,
                reason=row.decision.reason,
                outcome=DRY_RUN_OUTCOME,
                threshold=threshold,
                at=snapshot.taken_at,
            )
            for row in sorted(snapshot.workloads, key=lambda row: row.ref)
            if row.decision.action in DRY_RUN_ACTIONS
        ]


def _detail(action: ActionRecord, row: WorkloadStatus | None, outcome: str) -> str:
    """A new outcome in the same episode is news; so is another notice."""
    if action.action not in NOTICE_ACTIONS or row is None:
        return outcome
    # Notices recur within one idle episode (a warning again after a snooze, a second
    # all-clear): each is told apart by the time its notice names.
    notice = row.decision.notice
    named = notice.warned_at if action.action is not Action.WARN_DELETE else notice.delete_at
    return f"{outcome} {time_text(named or action.at)}"


def _threshold(snapshot: Snapshot) -> float | None:
    usage = snapshot.usage.get(DEFAULT_PROFILE)
    return usage.threshold if usage is not None else None


def _record(
    row: WorkloadStatus | None,
    ref: WorkloadRef,
    *,
    action: str,
    reason: str,
    outcome: str,
    threshold: float | None,
    at: datetime,
    detail: str = "",
) -> AuditRecord:
    decision: Decision | None = row.decision if row is not None else None
    return AuditRecord(
        at=at,
        actor=LOOP_ACTOR,
        action=action,
        target=str(ref),
        reason=reason,
        outcome=outcome,
        namespace=ref.namespace,
        gpus=decision.gpus if decision is not None else None,
        peak=decision.peak if decision is not None else None,
        coverage=decision.coverage if decision is not None else None,
        threshold=threshold,
        key=_key(row, detail=detail),
        subject=subject_of(row.info, decision) if row is not None else None,
    )


def _key(row: WorkloadStatus | None, *, detail: str) -> RecordKey | None:
    """None (recorded every time, as before keys) when there is no row to key it by."""
    if row is None or not row.info.uid:
        return None
    return RecordKey(subject=row.info.uid, episode=row.decision.idle_since, detail=detail)
