"""Bringing a deactivated workload back, and (admins) deactivating one now.

Reactivation sets a Workload's `spec.active: true`, or restores a RayCluster's `spec.suspend`
as it was before the service suspended it, and records who, when and why in annotations;
the `reactivated-at` time starts a fresh grace period, so the loop does not deactivate it
again at once. Both go through the loop's act sequence (`engine.actuation`): "deactivate now"
writes the same patch, owner annotations and Event as the loop does, and is refused for a
workload the service must never stop.
"""

from __future__ import annotations

import math
from datetime import datetime

from fastapi import APIRouter

from autoscaler.api.context import ApiContext, Caller, Context
from autoscaler.api.lookup import fresh_workload, workload_to_change
from autoscaler.api.problems import ApiProblem, error_responses
from autoscaler.api.schemas.requests import NamespaceName, ReasonRequest, WorkloadName
from autoscaler.api.schemas.views import ChangeResult
from autoscaler.domain.access import Identity
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.audit.records import AuditRecord
from autoscaler.domain.exemptions import reactivating
from autoscaler.domain.models import DEFAULT_PROFILE, WorkloadInfo, WorkloadStatus
from autoscaler.domain.problem_types import ProblemType
from autoscaler.engine.acting import sequence as actuation

router = APIRouter(prefix="/api/v1", tags=["activation"])
CHANGE_ERRORS = error_responses(401, 403, 404, 409, 422, 503)
ADMIN_REASON = "admin"  # the deactivations metric's reason label for "deactivate now"


@router.post(
    "/workloads/{namespace}/{name}/reactivate",
    summary="Reactivate a deactivated workload",
    responses=CHANGE_ERRORS,
)
def reactivate(
    context: Context,
    caller: Caller,
    namespace: NamespaceName,
    name: WorkloadName,
    request: ReasonRequest,
) -> ChangeResult:
    """Needs `patch` on the workload's owner (or the Workload). A Kueue Workload gets
    `spec.active: true` and may wait in its queue until Kueue admits it again. A RayCluster
    the service suspended (`manager` `kai` or `kuberay`) gets `spec.suspend` back as it was
    (removed, or `false`, from its `suspend-was` annotation, which goes too) and KubeRay
    recreates its pods; one suspended by someone else (no `suspend-was`) is refused with 409.
    The write is guarded by the version read: 409 if it changed meanwhile."""
    workload, _row = workload_to_change(context, caller, namespace, name)
    if workload.active:
        raise ApiProblem(409, f"{workload.ref} is already active", type=ProblemType.ALREADY_ACTIVE)
    now = context.clock.now()
    annotations = reactivating(by=caller.username, reason=request.reason, now=now)
    actuation.reactivate(  # Conflict (409) if changed meanwhile
        context.actuator,
        workload,
        annotations=annotations,
        message=f"Reactivated by {caller.username}: {request.reason}",
        logger=context.logger,
    )
    return _done(context, caller, workload, action="reactivate", reason=request.reason, now=now)


@router.post(
    "/workloads/{namespace}/{name}/deactivate",
    summary="Deactivate a workload now (admin)",
    responses=CHANGE_ERRORS,
)
def deactivate(
    context: Context,
    caller: Caller,
    namespace: NamespaceName,
    name: WorkloadName,
    request: ReasonRequest,
) -> ChangeResult:
    """Whatever its usage, exemption or pause; also in dry-run, since a person asked. A
    Kueue Workload gets `spec.active: false`, a RayCluster the service may suspend
    `spec.suspend: true`. Refused with 409, before any write, for a hands-off row: a
    RayCluster another controller (a RayJob, an AppWrapper) owns, or one on KAI's
    fractional GPUs: the service never stops those, whoever asks."""
    context.access.require_admin(caller)  # before the lookup, whose 409 names Workloads
    workload, row = fresh_workload(context, caller, namespace, name)
    if not workload.active:
        raise ApiProblem(
            409,
            f"{workload.ref} is already deactivated",
            type=ProblemType.ALREADY_DEACTIVATED,
        )
    now = context.clock.now()
    reason = f"deactivated now by {caller.username}: {request.reason}"
    actuation.deactivate(
        context.actuator,
        workload,
        audit=_audit(context, row, reason=reason, now=now, by=caller.username),
        message=reason,
        logger=context.logger,
    )
    gpus = row.decision.gpus if row is not None else workload.gpus
    context.metrics.deactivated(workload.ref, gpus=gpus, reason=ADMIN_REASON, at=now)
    return _done(context, caller, workload, action="deactivate", reason=request.reason, now=now)


def _audit(
    context: ApiContext, row: WorkloadStatus | None, *, reason: str, now: datetime, by: str
) -> DeactivationAudit:
    snapshot = context.store.latest()
    usage = snapshot.usage.get(DEFAULT_PROFILE) if snapshot is not None else None
    return DeactivationAudit(
        at=now,
        reason=reason,
        peak=row.decision.peak if row is not None else None,
        threshold=usage.threshold if usage is not None else math.nan,
        policy="deactivated by an admin through the API",
        by=by,
    )


def _done(
    context: ApiContext,
    caller: Identity,
    workload: WorkloadInfo,
    *,
    action: str,
    reason: str,
    now: datetime,
) -> ChangeResult:
    context.audit(
        AuditRecord(
            at=now,
            actor=caller.username,
            action=action,
            target=str(workload.ref),
            reason=reason,
            namespace=workload.ref.namespace,
            gpus=workload.gpus or None,
        )
    )
    context.logger.warning("%s %s by %s: %s", action, workload.ref, caller.username, reason)
    return ChangeResult(
        namespace=workload.ref.namespace,
        workload=workload.ref.name,
        action=action,
        by=caller.username,
        reason=reason,
        at=now,
    )
