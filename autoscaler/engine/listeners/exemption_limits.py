"""The maximum exemption length of each workload's rule, applied to hand-set annotations after
every cycle.

Subscribed to the snapshot store: for each workload whose Workload or owner carries an
`exempt-until` beyond now + its rule's maximum (`exemptions.maxDuration` of the rule its
decision carries; or an `exempt: "true"` the admin forbade), the service
rewrites it once to now + maximum, keeps the original in `exempt-until-requested`, logs a
warning and adds an audit record. The cut value is within the limit, so the next cycle
leaves it alone; the cycle that saw it still decided "exempt", as it will until the new end.

Only the leader cuts. Its record is keyed by the workload's UID, the object and the end
requested, so a cut redone from a snapshot read before the first one landed (a watch cache a
moment behind) is not recorded twice.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import AuditSink, Clock, WorkloadWrites
from autoscaler.domain import annotations as keys
from autoscaler.domain.audit.records import LOOP_ACTOR, Annotated, AuditRecord, RecordKey
from autoscaler.domain.exemptions import EXEMPT_UNTIL_REQUESTED, annotation_sources, cut_to_limit
from autoscaler.domain.models import Snapshot, WorkloadInfo, WorkloadStatus
from autoscaler.engine.acting.leadership import IsLeader, always_leading
from autoscaler.engine.listeners.limiting import limit_rows


class ExemptionLimiter:
    def __init__(
        self,
        *,
        writer: WorkloadWrites,
        audit: AuditSink,
        clock: Clock,
        allow_indefinite: bool,
        logger: logging.Logger,
        leading: IsLeader = always_leading,
    ) -> None:
        """`leading`: only the leader rewrites annotations; a follower writes nothing."""
        self._writer = writer
        self._audit = audit
        self._clock = clock
        self._allow_indefinite = allow_indefinite
        self._log = logger
        self._leading = leading

    def __call__(self, snapshot: Snapshot) -> None:
        limit_rows(
            snapshot,
            self._limit,
            leading=self._leading,
            clock=self._clock,
            audit=self._audit,
            logger=self._log,
            what="cut exemptions",
        )

    def _limit(self, row: WorkloadStatus, now: datetime) -> list[AuditRecord]:
        workload, maximum = row.info, row.decision.rule.exemptions.max_duration
        done = []
        for on_owner, found in annotation_sources(workload):
            patch = cut_to_limit(
                found,
                now=now,
                maximum=maximum,
                allow_indefinite=self._allow_indefinite,
            )
            if patch is None:
                continue
            try:
                target = (
                    self._writer.annotate_owner(workload, patch)
                    if on_owner
                    else self._writer.annotate_workload(workload, patch)
                )
            except ClusterError as exc:
                self._log.warning("cannot cut the exemption of %s: %s", workload.ref, exc)
                continue
            done.append(self._report(workload, target, patch, maximum=maximum, now=now))
        return done

    def _report(
        self,
        workload: WorkloadInfo,
        target: Annotated,
        patch: dict[str, str | None],
        *,
        maximum: timedelta,
        now: datetime,
    ) -> AuditRecord:
        requested = patch.get(EXEMPT_UNTIL_REQUESTED)
        reason = (
            f"exemption on {target} cut to the maximum of {maximum}: "
            f"requested {requested}, now until {patch.get(keys.EXEMPT_UNTIL)}"
        )
        self._log.warning(
            "%s",
            reason,
            extra={"namespace": workload.ref.namespace, "workload": workload.ref.name},
        )
        return AuditRecord(
            at=now,
            actor=LOOP_ACTOR,
            action="cut-exemption",
            target=str(workload.ref),
            reason=reason,
            namespace=workload.ref.namespace,
            key=RecordKey(subject=workload.uid, detail=f"{target} requested {requested}"),
        )
