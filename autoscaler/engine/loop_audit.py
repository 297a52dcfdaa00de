"""The loop's part of the audit trail, written from each published snapshot.

Records every action the cycle attempted (with the observed peak, coverage and threshold),
unless the loop already wrote its record before the patch (`ActionRecord.audited`), and, in
dry-run, each "would deactivate" decision when it first appears for a workload, so an admin
can judge the policy before letting it act.
"""

from __future__ import annotations

import logging
from datetime import datetime

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import AuditSink
from autoscaler.domain.models import DEFAULT_PROFILE, Action, Decision, Snapshot, WorkloadRef
from autoscaler.domain.records import AuditRecord
from autoscaler.engine.exemption_limits import SERVICE_ACTOR
from autoscaler.engine.telemetry import ServiceMetrics


class LoopAuditor:
    def __init__(
        self, *, audit: AuditSink, metrics: ServiceMetrics, logger: logging.Logger
    ) -> None:
        self._audit = audit
        self._metrics = metrics
        self._log = logger
        self._would: set[WorkloadRef] = set()  # dry-run candidates already recorded

    def __call__(self, snapshot: Snapshot) -> None:
        records = self._actions(snapshot) + self._new_dry_run_candidates(snapshot)
        if not records:
            return
        try:
            self._audit.record(*records)
        except ClusterError as exc:
            self._log.warning("audit records of cycle %d not written: %s", snapshot.cycle, exc)
            self._metrics.error("runtime-state")

    def _actions(self, snapshot: Snapshot) -> list[AuditRecord]:
        threshold = _threshold(snapshot)
        records = []
        for action in snapshot.actions:
            if action.audited:
                continue  # the loop wrote its durable record before the patch
            row = snapshot.find(action.workload)
            decision = row.decision if row is not None else None
            records.append(
                _record(
                    decision,
                    action.workload,
                    action=action.action.value,
                    reason=action.reason,
                    outcome=str(action.outcome),
                    threshold=threshold,
                    at=action.at,
                )
            )
        return records

    def _new_dry_run_candidates(self, snapshot: Snapshot) -> list[AuditRecord]:
        if not snapshot.cluster_ok:
            return []
        threshold = _threshold(snapshot)
        wanted = {
            row.ref: row.decision
            for row in snapshot.workloads
            if row.decision.action is Action.WOULD_DEACTIVATE
        }
        fresh = sorted(set(wanted) - self._would)
        self._would = set(wanted)
        return [
            _record(
                wanted[ref],
                ref,
                action=Action.WOULD_DEACTIVATE.value,
                reason=wanted[ref].reason,
                outcome="dry-run: not patched",
                threshold=threshold,
                at=snapshot.taken_at,
            )
            for ref in fresh
        ]


def _threshold(snapshot: Snapshot) -> float | None:
    usage = snapshot.usage.get(DEFAULT_PROFILE)
    return usage.threshold if usage is not None else None


def _record(
    decision: Decision | None,
    ref: WorkloadRef,
    *,
    action: str,
    reason: str,
    outcome: str,
    threshold: float | None,
    at: datetime,
) -> AuditRecord:
    return AuditRecord(
        at=at,
        actor=SERVICE_ACTOR,
        action=action,
        target=str(ref),
        reason=reason,
        outcome=outcome,
        namespace=ref.namespace,
        gpus=decision.gpus if decision is not None else None,
        peak=decision.peak if decision is not None else None,
        coverage=decision.coverage if decision is not None else None,
        threshold=threshold,
    )
