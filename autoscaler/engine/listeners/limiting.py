"""What the limits on hand-set annotations (exemptions, snoozes) share: subscribed to the
snapshot store, they bound each row's annotations after every cycle, only from fresh rows
and only on the leader, and keep the audit records of what they rewrote in one write."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import AuditSink, Clock
from autoscaler.domain.audit.records import AuditRecord
from autoscaler.domain.models import Snapshot, WorkloadStatus
from autoscaler.engine.acting.context import Leads

Limit = Callable[[WorkloadStatus, datetime], Iterable[AuditRecord]]


def limit_rows(
    snapshot: Snapshot,
    limit: Limit,
    *,
    leads: Leads,
    clock: Clock,
    audit: AuditSink,
    logger: logging.Logger,
    what: str,
) -> None:
    """`limit` each row (its writes done, the records of them returned), then audit them.
    `what` names the records in the warning logged when the audit write fails."""
    if not snapshot.cluster_ok:
        return  # the rows are last cycle's: do not write from stale annotations
    if not leads():
        return  # another replica writes
    now = clock.now()
    records = [record for row in snapshot.workloads for record in limit(row, now)]
    if not records:
        return
    try:
        audit.record(*records)
    except ClusterError as exc:  # the rewrites stand; only their records are missing
        logger.warning("audit records of %s not written: %s", what, exc)
