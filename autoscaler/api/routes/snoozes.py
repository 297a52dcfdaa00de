"""Snoozing a workload ("keep it"), and taking the snooze away.

Stored as annotations on the Workload (the owner shows the end), where the warning stage
reads them back each cycle. Bounded by the workload's rule: a longer ask is clipped, and past
the rule's count per day it is refused. Needs the same right as exempting: `patch` on the
workload's owner (or the Workload).
"""

from __future__ import annotations

from fastapi import APIRouter

from autoscaler.api.context import Caller, Context
from autoscaler.api.lookup import fresh_workload
from autoscaler.api.problems import ApiProblem, error_responses
from autoscaler.api.schemas.requests import NamespaceName, SnoozeRequest, WorkloadName
from autoscaler.api.schemas.views import SnoozeResult
from autoscaler.api.snoozes import keep, rule_of
from autoscaler.domain.annotations import SNOOZED_UNTIL
from autoscaler.domain.audit.records import AuditRecord
from autoscaler.engine.acting import snooze as snoozing

router = APIRouter(prefix="/api/v1", tags=["snoozes"])
CHANGE_ERRORS = error_responses(401, 403, 404, 409, 422, 503)


@router.post(
    "/workloads/{namespace}/{name}/snooze",
    summary="Keep a workload running for a while: push its planned stop back",
    responses=CHANGE_ERRORS,
)
def snooze(
    context: Context,
    caller: Caller,
    namespace: NamespaceName,
    name: WorkloadName,
    request: SnoozeRequest,
) -> SnoozeResult:
    """Needs `patch` on the workload's owner (or the Workload). No stop comes before the
    snooze ends; if the workload is still idle then, it is warned again first. 409 when the
    rule's snoozes per day are used up."""
    now = context.clock.now()
    workload, _row = fresh_workload(context, caller, namespace, name)
    context.access.require_workload_change(caller, workload)
    rule = rule_of(context, workload)
    grant = keep(
        context,
        workload,
        until=now + request.duration,
        by=caller.username,
        reason=request.reason,
        rule=rule,
        now=now,
    )
    return SnoozeResult(
        namespace=namespace,
        workload=workload.ref.name,
        until=grant.until,
        clipped_from=grant.clipped_from,
        rule=rule.name,
        by=caller.username,
        reason=request.reason,
    )


@router.delete(
    "/workloads/{namespace}/{name}/snooze",
    summary="Remove a workload's snooze",
    responses=CHANGE_ERRORS,
)
def unsnooze(
    context: Context, caller: Caller, namespace: NamespaceName, name: WorkloadName
) -> SnoozeResult:
    """A stop still needs a fresh warning, `warnBefore` ahead."""
    workload, _row = fresh_workload(context, caller, namespace, name)
    context.access.require_workload_change(caller, workload)
    if SNOOZED_UNTIL not in workload.annotations:
        raise ApiProblem(409, f"{workload.ref} is not snoozed")
    rule = rule_of(context, workload)
    snoozing.unsnooze(context.actuator, workload, by=caller.username, logger=context.logger)
    context.audit(
        AuditRecord(
            at=context.clock.now(),
            actor=caller.username,
            action="unsnooze",
            target=str(workload.ref),
            reason="snooze removed",
            namespace=namespace,
        )
    )
    return SnoozeResult(
        namespace=namespace,
        workload=workload.ref.name,
        until=None,
        rule=rule.name,
        by=caller.username,
    )
