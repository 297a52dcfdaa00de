"""The bounds on hand-set annotations, applied after every cycle: exemptions and snoozes
written by hand are held to the limits of each workload's rule (the one its decision carries).

Both limiters are subscribed to the snapshot store. They bound each row's annotations only
from fresh rows (never from the rows a cluster outage republished) and only on the leader, and
keep the audit records of what they rewrote in one write per cycle.

Exemptions: for each workload whose Workload or owner carries an `exempt-until` beyond now +
its rule's maximum (`exemptions.maxDuration`; or an `exempt: "true"` the admin forbade), the
service rewrites it once to now + maximum, keeps the original in `exempt-until-requested`,
logs a warning and adds an audit record. The cut value is within the limit, so the next cycle
leaves it alone; the cycle that saw it still decided "exempt", as it will until the new end.
An owner the service never writes (a Job, a StatefulSet, a Deployment, a pod) keeps its long
value: the cut goes on the Workload naming the owner's value it replaces
(`domain.exemptions.replacing`), which is then read no more while it is unchanged, so the
bound is written once and holds; a person's new value there is bounded afresh, once.

Snoozes (ISSUE 15): a SNOOZED_UNTIL that differs from the end the service granted
(SNOOZE_GRANTED) was written by hand: it is granted as a request from whoever SNOOZED_BY
names, within the rule's bounds (`snooze.maxDuration`, `snooze.perDay`): clipped to the
longest snooze, or removed when the day's snoozes are used up. The bounded value is written
once (with SNOOZE_GRANTED, so the next cycle leaves it alone) and audited: "snooze" with the
person as actor, or "cut-snooze" naming the bound when it was clipped or refused. The stage
already honoured the bound in the cycle that saw it (`domain.notices.reading`), so nothing
waits for this write.

Each record is keyed by the workload's UID and what was asked (the object and the end
requested), so a rewrite redone from a snapshot read before the first one landed (a watch
cache a moment behind) is not recorded twice.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import ClassVar, Generic, TypeVar

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import AuditSink, Clock, WorkloadActuator, WorkloadWrites
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.audit.records import LOOP_ACTOR, Annotated, AuditRecord, RecordKey
from autoscaler.domain.exemptions import (
    EXEMPT_UNTIL_REQUESTED,
    annotation_sources,
    cut_to_limit,
    replacing,
)
from autoscaler.domain.models import Snapshot, WorkloadInfo, WorkloadStatus
from autoscaler.domain.notices.snoozes import HAND_SET_BY, SnoozeGrant, hand_set_snooze
from autoscaler.domain.policy.owner_words import named
from autoscaler.engine.acting.context import Leads, always_leads

# What a limiter writes through: annotations (snoozes), or the actuator that also says whether
# an owner is ours to write (exemptions).
Writer = TypeVar("Writer", bound=WorkloadWrites)


class _Limiter(ABC, Generic[Writer]):
    """One bound, applied to every fresh row after a cycle by the leader; `_limit` does a
    row's writes and returns the records of them, audited together."""

    _what: ClassVar[str]  # names the records in the warning logged when the audit write fails

    def __init__(
        self,
        *,
        writer: Writer,
        audit: AuditSink,
        clock: Clock,
        logger: logging.Logger,
        leads: Leads = always_leads,
    ) -> None:
        """`leads`: only the leader rewrites annotations; a follower writes nothing."""
        self._writer = writer
        self._audit = audit
        self._clock = clock
        self._log = logger
        self._leads = leads

    def __call__(self, snapshot: Snapshot) -> None:
        if not snapshot.cluster_ok:
            return  # the rows are last cycle's: do not write from stale annotations
        if not self._leads():
            return  # another replica writes
        now = self._clock.now()
        records = [record for row in snapshot.workloads for record in self._limit(row, now)]
        if not records:
            return
        try:
            self._audit.record(*records)
        except ClusterError as exc:  # the rewrites stand; only their records are missing
            self._log.warning("audit records of %s not written: %s", self._what, exc)

    @abstractmethod
    def _limit(self, row: WorkloadStatus, now: datetime) -> Sequence[AuditRecord]: ...


class ExemptionLimiter(_Limiter[WorkloadActuator]):
    _what = "cut exemptions"

    def __init__(
        self,
        *,
        writer: WorkloadActuator,
        audit: AuditSink,
        clock: Clock,
        allow_indefinite: bool,
        logger: logging.Logger,
        leads: Leads = always_leads,
    ) -> None:
        super().__init__(writer=writer, audit=audit, clock=clock, logger=logger, leads=leads)
        self._allow_indefinite = allow_indefinite

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
                target = self._write(workload, found, patch, on_owner=on_owner)
            except ClusterError as exc:
                self._log.warning("cannot cut the exemption of %s: %s", workload.ref, exc)
                continue
            report = self._report(workload, target, patch, on_owner=on_owner, maximum=maximum)
            done.append(_cut_record(workload, target, patch, reason=report, now=now))
        return done

    def _write(
        self,
        workload: WorkloadInfo,
        found: Mapping[str, str],
        patch: dict[str, str | None],
        *,
        on_owner: bool,
    ) -> Annotated:
        if not on_owner:
            return self._writer.annotate_workload(workload, patch)
        if self._writer.writes_owner(workload):
            return self._writer.annotate_owner(workload, patch)
        # Never written (a Job, a pod...): the Workload's copy replaces the owner's value.
        return self._writer.annotate_workload(workload, replacing(found, patch))

    def _report(
        self,
        workload: WorkloadInfo,
        target: Annotated,
        patch: dict[str, str | None],
        *,
        on_owner: bool,
        maximum: timedelta,
    ) -> str:
        requested = patch.get(EXEMPT_UNTIL_REQUESTED)
        cut = f"exemption on {target}"
        if on_owner and target.kind == "Workload":  # the owner's, replaced on its Workload
            cut = f"exemption on {named(workload.ref, workload.owner)} (kept there, replaced on "
            cut += f"{target})"
        reason = f"{cut} cut to the maximum of {maximum}: requested {requested}, now until "
        reason += f"{patch.get(keys.EXEMPT_UNTIL)}"
        self._log.warning(
            "%s",
            reason,
            extra={"namespace": workload.ref.namespace, "workload": workload.ref.name},
        )
        return reason


def _cut_record(
    workload: WorkloadInfo,
    target: Annotated,
    patch: Mapping[str, str | None],
    *,
    reason: str,
    now: datetime,
) -> AuditRecord:
    requested = patch.get(EXEMPT_UNTIL_REQUESTED)
    return AuditRecord(
        at=now,
        actor=LOOP_ACTOR,
        action="cut-exemption",
        target=str(workload.ref),
        reason=reason,
        namespace=workload.ref.namespace,
        key=RecordKey(subject=workload.uid, detail=f"{target} requested {requested}"),
    )


class SnoozeLimiter(_Limiter[WorkloadWrites]):
    _what = "hand-set snoozes"

    def _limit(self, row: WorkloadStatus, now: datetime) -> tuple[AuditRecord, ...]:
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
        record = _snooze_record(row, grant, asked=asked, now=now)
        log = self._log.info if record.action == "snooze" else self._log.warning
        log("%s %s: %s", record.action, workload.ref, record.reason)
        return (record,)


def _snooze_record(
    row: WorkloadStatus, grant: SnoozeGrant, *, asked: str, now: datetime
) -> AuditRecord:
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
