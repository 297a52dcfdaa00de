"""Domain values → response views. Pure: the current time is an argument."""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime

from autoscaler.api.schemas.stopped import StoppedView
from autoscaler.api.schemas.views import (
    AuditView,
    BreakerView,
    ExemptionView,
    GuardsView,
    NoticeView,
    OwnerKindView,
    OwnerView,
    PausesView,
    PauseView,
    SnapshotView,
    ViaKueueView,
    WaitersJudgedView,
    WorkloadView,
)
from autoscaler.domain import annotations as keys
from autoscaler.domain.audit.records import EVERYTHING, AuditRecord, RuntimeState
from autoscaler.domain.audit.stopped import stopped_of
from autoscaler.domain.exemptions import Exemption, exemption_of
from autoscaler.domain.guards.breaker import BreakerState
from autoscaler.domain.kueue_config import GateServed
from autoscaler.domain.models import (
    GuardReport,
    OwnerRef,
    Snapshot,
    WaitersSeen,
    WorkloadInfo,
    WorkloadRef,
    WorkloadStatus,
)
from autoscaler.domain.notices.notice import NO_NOTICE, Notice
from autoscaler.domain.policy.owner_words import named, stop_words, subject_name
from autoscaler.domain.policy.owners import KNOWN_OWNERS
from autoscaler.domain.policy.via_kueue import mark_status
from autoscaler.domain.tenant_names import MayRead, reason_told, record_names, told
from autoscaler.domain.usage.assessment import running_unmonitored


def workload_view(
    row: WorkloadStatus, *, now: datetime, may_read: MayRead, gate: GateServed | None = None
) -> WorkloadView:
    """`gate`: the snapshot's reading of Kueue's PriorityBoost gate (via-kueue rules);
    `may_read`: the caller's, for the waiter its reason may name (domain/tenant_names.py)."""
    info, decision = row.info, row.decision
    owner = info.owner
    exemption = exemption_of(info, now=now)
    stop = stop_words(owner, manager=info.manager)
    return WorkloadView(
        namespace=info.ref.namespace,
        name=info.ref.name,
        manager=info.manager,
        queue=info.queue,
        cluster_queue=info.cluster_queue,
        owner=OwnerView(
            api_version=owner.api_version,
            kind=owner.kind,
            name=owner.name,
            display=named(info.ref, owner),
        )
        if owner
        else None,
        active=info.active,
        admitted=info.admitted,
        priority_class=info.priority_class,
        gpus=decision.gpus,
        state=decision.state,
        action=decision.action,
        reason=reason_told(decision, may_read=may_read),
        evidence=list(decision.evidence),
        idle_held_gpus=decision.idle_held_gpus,
        running_unmonitored=running_unmonitored(decision),
        peak_utilization=decision.peak,
        coverage=decision.coverage,
        idle_since=decision.idle_since,
        time_left_seconds=decision.time_left.total_seconds() if decision.time_left else None,
        exemption=exemption_view(exemption) if exemption else None,
        deactivated_at=keys.parse_time(info.annotations.get(keys.DEACTIVATED_AT, "")),
        reactivated_at=keys.reactivated_at(info.annotations, info.owner_annotations),
        notice=notice_view(decision.notice),
        stop_means=stop.said,
        bring_back=stop.bring_back,
        stop_lasts=stop.lasts,
        via_kueue=via_kueue_view(row, gate=gate),
        stopped=stopped_view(info, may_read=may_read),
    )


def stopped_view(info: WorkloadInfo, *, may_read: MayRead) -> StoppedView | None:
    """None while active; the waiter told per caller (domain/tenant_names.py)."""
    stopped = stopped_of(info)
    if stopped is None:
        return None
    return StoppedView(
        by_this_service=stopped.ours,
        at=stopped.at,
        by=stopped.stopper,
        rule=stopped.rule,
        waiter=stopped.waiter_told(may_read=may_read),
        reason=stopped.reason_told(may_read=may_read),
        evidence=stopped.evidence(),
        idle_seconds=stopped.idle_for.total_seconds() if stopped.idle_for else None,
        peak=stopped.peak,
        coverage=stopped.coverage,
        threshold=stopped.threshold,
        comes_back_by_itself=not stopped.lasts,
        bring_back=stopped.bring_back,
    )


def via_kueue_view(row: WorkloadStatus, *, gate: GateServed | None) -> ViaKueueView | None:
    status = mark_status(row.info, row.decision, served=gate)
    if status is None:
        return None
    return ViaKueueView(
        marked=status.marked,
        since=status.since,
        gate=status.gate,
        gate_line=status.gate_line,
        reason=status.said,
    )


def owner_kind_view(
    owner: OwnerRef | None, *, enabled_kinds: Collection[str] | None
) -> OwnerKindView | None:
    """`enabled_kinds`: the kinds the settings act on; None when no rules are loaded."""
    if owner is None:
        return None
    row = KNOWN_OWNERS.get(owner.kind)
    return OwnerKindView(
        kind=owner.kind,
        known=row is not None,
        enabled=None if enabled_kinds is None else owner.kind in enabled_kinds,
        opt_in=row is not None and not row.enabled,
    )


def notice_view(notice: Notice) -> NoticeView | None:
    """None when the decision has no notice at all, so the key is left out."""
    if notice == NO_NOTICE:
        return None
    return NoticeView(
        warned_at=notice.warned_at,
        stop_at=notice.stop_at,
        snoozed_until=notice.snoozed_until,
        snoozed_by=notice.snoozed_by,
        delete_at=notice.delete_at,
    )


def exemption_view(exemption: Exemption) -> ExemptionView:
    return ExemptionView(
        until=exemption.until,
        indefinite=exemption.until is None,
        on_owner=exemption.on_owner,
        by=exemption.by,
        reason=exemption.reason,
        set_at=exemption.set_at,
        requested_until=exemption.requested_until,
    )


def snapshot_view(snapshot: Snapshot) -> SnapshotView:
    return SnapshotView(
        cycle=snapshot.cycle,
        taken_at=snapshot.taken_at,
        cluster_ok=snapshot.cluster_ok,
        metrics_ok=snapshot.metrics_ok,
        dry_run=snapshot.dry_run,
        errors=list(snapshot.errors),
    )


def pauses_view(state: RuntimeState, *, shown: Callable[[str], bool]) -> PausesView:
    """The service's pause, and each namespace's for which `shown(namespace)` (whom it is
    told to: a namespace's pause, who set it and why, is its tenants' business)."""
    namespaces = sorted(namespace for namespace in state.pauses.namespaces if shown(namespace))
    scopes = ([EVERYTHING] if state.pauses.everything else []) + namespaces
    paused = []
    for scope in scopes:
        note = state.notes.get(scope)
        paused.append(
            PauseView(
                scope="service" if scope == EVERYTHING else scope,
                by=note.by if note else None,
                reason=note.reason if note else None,
                at=note.at if note else None,
            )
        )
    return PausesView(service_paused=state.pauses.everything, paused=paused)


def audit_view(record: AuditRecord, *, may_read: MayRead) -> AuditView:
    """`may_read`: the caller's, for the waiter the record's reason may name."""
    subject = record.subject
    waiter = (
        record_names(subject.beneficiary, subject.beneficiary_queue) if subject is not None else ()
    )
    return AuditView(
        at=record.at,
        actor=record.actor,
        action=record.action,
        target=record.target,
        reason=told(record.reason, waiter, may_read=may_read),
        outcome=record.outcome,
        namespace=record.namespace,
        owner=_record_owner(record),
        gpus=record.gpus,
        peak=record.peak,
        coverage=record.coverage,
        threshold=record.threshold,
        evidence=record.subject.evidence if record.subject is not None else None,
    )


def _record_owner(record: AuditRecord) -> str | None:
    ref = WorkloadRef.parse(record.target)
    owner = record.subject.owner if record.subject is not None else None
    return subject_name(ref.namespace, owner) if ref is not None else None


def breaker_view(
    state: BreakerState, *, named: bool, close_after: int | None = None
) -> BreakerView:
    """`named`: the reason with the workloads' names (admins); else its counts only."""
    return BreakerView(
        open=state.open,
        since=state.since,
        reason=(state.reason if named else state.summary) or None,
        normal_cycles=state.normal_cycles,
        close_after=close_after,
    )


def guards_view(report: GuardReport) -> GuardsView:
    """For /readyz, which answers without a token: counts, never a workload's name."""
    return GuardsView(
        breaker=breaker_view(report.breaker, named=False, close_after=report.breaker_close_after),
        hourly_limit=report.hourly_limit,
        deactivations_last_hour=report.deactivations_last_hour,
        deferred=report.deferred,
        contested_count=len(report.contested),
        problems=list(report.problems),
    )


def waiters_view(
    seen: WaitersSeen | None, ref: WorkloadRef, *, may_read: MayRead
) -> WaitersJudgedView | None:
    """The cycle's waiter judgement; `ref`'s own only where it is freed for a waiter, its
    waiter (and the heads it names) named only where the caller may read their namespaces."""
    if seen is None:
        return None
    served = seen.served.get(ref)
    return WaitersJudgedView(
        judged=seen.judged,
        outcomes=dict(seen.outcomes),
        fit_unknown=dict(seen.unknown_why),
        failure=seen.failure,
        judgement=served.told(may_read=may_read) if served is not None else None,
    )
