"""Snoozing a workload ("keep it"), and taking the snooze away.

Stored as annotations on the Workload (the owner shows the end), where the warning stage
reads them back each cycle. Bounded by the workload's rule: a longer ask is clipped, and past
the rule's count per day it is refused. Needs the same right as exempting: `patch` on the
workload's owner (or the Workload).

`keep` is what a snooze comes to for this route and the signed link alike
(`api/routes/links.py`): the act sequence (`engine/acting/snooze.py`), the audit record and
the SNOOZED notification. A refused snooze is a 409 and writes nothing.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter

from autoscaler.api.context import ApiContext, Caller, Context
from autoscaler.api.lookup import held_of, rule_of, workload_to_change
from autoscaler.api.problems import ApiProblem, error_responses
from autoscaler.api.schemas.requests import NamespaceName, SnoozeRequest, WorkloadName
from autoscaler.api.schemas.views import SnoozeResult
from autoscaler.core.errors import Conflict
from autoscaler.domain.annotations import SNOOZED_UNTIL, time_text
from autoscaler.domain.audit.records import AuditRecord
from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.notices.notifications import NoticeKind, Notification
from autoscaler.domain.notices.snoozes import SnoozeGrant
from autoscaler.domain.policy.rules import Rule
from autoscaler.domain.problem_types import ProblemType
from autoscaler.engine.acting import snooze as snoozing
from autoscaler.engine.notify.notices import send

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
    workload, _row = workload_to_change(context, caller, namespace, name)
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
    workload, _row = workload_to_change(context, caller, namespace, name)
    if SNOOZED_UNTIL not in workload.annotations:
        raise ApiProblem(409, f"{workload.ref} is not snoozed", type=ProblemType.NOTHING_TO_REMOVE)
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


class SnoozeRaced(ApiProblem):
    """The Workload changed between its read and the snooze's patch (another snooze, or the
    loop, came first): nothing was written. A 409; the link shows "already used"."""


def keep(
    context: ApiContext,
    workload: WorkloadInfo,
    *,
    until: datetime,
    by: str,
    reason: str,
    rule: Rule,
    now: datetime,
) -> SnoozeGrant:
    """Snooze under `rule` (`rule_of`, matched once by the caller), audit with `by` as the
    actor, and tell the workload's targets."""
    try:
        grant = snoozing.snooze(
            context.actuator,
            workload,
            until=until,
            by=by,
            reason=reason,
            rule=rule,
            now=now,
            logger=context.logger,
        )
    except Conflict as exc:
        raise SnoozeRaced(409, f"{workload.ref} changed since it was read: {exc}") from exc
    if grant.refused is not None or grant.until is None:
        raise ApiProblem(409, f"{workload.ref} cannot be snoozed: {grant.refused}")
    context.audit(
        AuditRecord(
            at=now,
            actor=by,
            action="snooze",
            target=str(workload.ref),
            reason=_audited(grant, rule=rule, reason=reason),
            namespace=workload.ref.namespace,
            gpus=workload.gpus or None,
        )
    )
    _notify(context, workload, grant=grant, rule=rule, by=by, reason=reason, now=now)
    return grant


def _audited(grant: SnoozeGrant, *, rule: Rule, reason: str) -> str:
    assert grant.until is not None
    said = f"until {time_text(grant.until)}"
    if grant.clipped_from is not None:  # the bound an admin set is visible in the trail
        said += f" (asked until {time_text(grant.clipped_from)}, clipped to rule {rule.name}'s "
        said += "longest snooze)"
    return f"{said}: {reason}"


def _notify(
    context: ApiContext,
    workload: WorkloadInfo,
    *,
    grant: SnoozeGrant,
    rule: Rule,
    by: str,
    reason: str,
    now: datetime,
) -> None:
    notification = Notification(
        kind=NoticeKind.SNOOZED,
        workload=workload.ref,
        uid=workload.uid,
        owner=workload.owner,
        rule=rule.name,
        reason=f"kept by {by}: {reason}",
        at=now,
        gpus=workload.gpus,
        snoozed_until=grant.until,
        snoozed_by=by,
        held=held_of(context, workload.ref),
        manager=workload.manager,
    )
    send(context.notices.loop, notification, workload=workload, rule=rule)
