"""Snoozes written by hand (`kubectl annotate ... snoozed-until=...`) bounded like a request,
after every cycle (ISSUE 15).

Subscribed to the snapshot store, beside the exemption limits. A SNOOZED_UNTIL that differs
from the end the service granted (SNOOZE_GRANTED) was written by hand: it is granted as a
request from whoever SNOOZED_BY names, within the bounds of the workload's rule
(`snooze.maxDuration`, `snooze.perDay`): clipped to the longest snooze, or removed when the
day's snoozes are used up. The bounded value is written once (with SNOOZE_GRANTED, so the
next cycle leaves it alone) and audited: "snooze" with the person as actor, or "cut-snooze"
naming the bound when it was clipped or refused. The stage already honoured the bound in the
cycle that saw it (`domain.notice_reading.snooze_in_force`), so nothing waits for this write.

Only the leader writes. Each record is keyed by the workload's UID and the end asked for, so
a snapshot read before the first write landed does not record it twice.
"""

from __future__ import annotations

import logging
from datetime import datetime

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import AuditSink, Clock, WorkloadWrites
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.audit.records import LOOP_ACTOR, AuditRecord, RecordKey
from autoscaler.domain.models import Snapshot, WorkloadStatus
from autoscaler.domain.notices.snoozes import HAND_SET_BY, SnoozeGrant, hand_set_snooze
from autoscaler.engine.acting.leadership import IsLeader, always_leading
from autoscaler.engine.listeners.limiting import limit_rows


class SnoozeLimiter:
    def __init__(
        self,
        *,
        writer: WorkloadWrites,
        audit: AuditSink,
        clock: Clock,
        logger: logging.Logger,
        leading: IsLeader = always_leading,
    ) -> None:
        self._writer = writer
        self._audit = audit
        self._clock = clock
        self._log = logger
        self._leading = leading

    def __call__(self, snapshot: Snapshot) -> None:
        limit_rows(
            snapshot,
            self._bound,
            leading=self._leading,
            clock=self._clock,
            audit=self._audit,
            logger=self._log,
            what="hand-set snoozes",
        )

    def _bound(self, row: WorkloadStatus, now: datetime) -> tuple[AuditRecord, ...]:
        workload = row.info
        grant = hand_set_snooze(workload, bounds=row.decision.rule.notice.snooze, now=now)
        if grant is None:
            return ()
        try:
            self._writer.annotate_workload(workload, grant.patch)
        except ClusterError as exc:  # bounded again next cycle; the stage bounds it meanwhile
            self._log.warning("cannot bound the hand-set snooze of %s: %s", workload.ref, exc)
            return ()
        asked = workload.annotations.get(keys.SNOOZED_UNTIL, "")
        record = _record(row, grant, asked=asked, now=now)
        log = self._log.info if record.action == "snooze" else self._log.warning
        log("%s %s: %s", record.action, workload.ref, record.reason)
        return (record,)


def _record(row: WorkloadStatus, grant: SnoozeGrant, *, asked: str, now: datetime) -> AuditRecord:
    workload = row.info
    by = workload.annotations.get(keys.SNOOZED_BY) or HAND_SET_BY
    if grant.refused is not None:
        action, actor = "cut-snooze", LOOP_ACTOR
        reason = f"hand-set snooze until {asked} by {by} removed: {grant.refused}"
    elif grant.clipped_from is not None and grant.until is not None:
        action, actor = "cut-snooze", LOOP_ACTOR
        bound = row.decision.rule.name
        reason = (
            f"hand-set snooze by {by} cut to the longest snooze of rule {bound}: "
            f"requested {asked}, now until {time_text(grant.until)}"
        )
    else:
        action, actor = "snooze", by
        reason = workload.annotations.get(keys.SNOOZE_REASON) or f"snoozed until {asked}"
    return AuditRecord(
        at=now,
        actor=actor,
        action=action,
        target=str(workload.ref),
        reason=reason,
        namespace=workload.ref.namespace,
        key=RecordKey(subject=workload.uid, detail=f"snooze until {asked}"),
    )
