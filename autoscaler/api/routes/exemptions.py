"""Exempting a workload, and taking the exemption away.

Stored as annotations on the Workload's owner (the ones a user can set with kubectl), so it
survives restarts and every replica and the loop see it; on the Workload where the owner is
never the service's to write (a Job, a StatefulSet, a Deployment, a pod). Expired exemptions
stop counting by themselves; nothing has to remove them. An exemption a person set by hand on
such an owner can only be removed there: taking it away is a 409 naming the command.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from fastapi import APIRouter

from autoscaler.api.context import ApiContext, Caller, Context
from autoscaler.api.lookup import rule_of, workload_to_change
from autoscaler.api.problems import ApiProblem, error_responses, invalid
from autoscaler.api.schemas.requests import ExemptionRequest, NamespaceName, WorkloadName
from autoscaler.api.schemas.views import ExemptionResult, ExemptionView
from autoscaler.domain.annotations import time_text
from autoscaler.domain.audit.records import AuditRecord
from autoscaler.domain.durations import format_duration
from autoscaler.domain.exemptions import (
    EXEMPTION_KEYS,
    annotation_sources,
    exempting,
    held_on_owner,
    is_indefinite,
    kubectl_removal,
    owner_value,
    unexempting,
    written_sources,
)
from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.policy.owner_words import named
from autoscaler.domain.policy.rules import ExemptionBounds, ExemptionRight
from autoscaler.domain.problem_types import ProblemType

router = APIRouter(prefix="/api/v1", tags=["exemptions"])
CHANGE_ERRORS = error_responses(401, 403, 404, 409, 422, 503)
# A bound that depends on the clock and on the workload's rule, so the schema cannot carry it.
EXEMPT_ERRORS = CHANGE_ERRORS | error_responses(
    422,
    reasons={
        422: "besides a field the schema refuses, a schema-valid `duration` longer than, or "
        "`until` further away than, the maximum exemption of the workload's rule "
        f"(`exemptions.maxDuration`, {format_duration(ExemptionBounds().max_duration)} by "
        "default), or an `until` already past; the detail names the field and the maximum"
    },
)


def exemption_end(request: ExemptionRequest, *, now: datetime, maximum: timedelta) -> datetime:
    """When the requested exemption ends; a 422 naming the field when it cannot be granted."""
    most = f"the maximum exemption of {format_duration(maximum)}"
    if request.duration is not None:
        if request.duration > maximum:
            raise invalid("body.duration", f"is longer than {most}")
        return now + request.duration
    assert request.until is not None  # the schema requires exactly one of the two
    if request.until <= now:
        raise invalid("body.until", "is in the past")
    if request.until > now + maximum:
        raise invalid("body.until", f"is further away than {most}")
    return request.until


@router.put(
    "/workloads/{namespace}/{name}/exemption",
    summary="Exempt a workload for a duration or until a time",
    responses=EXEMPT_ERRORS,
)
def exempt(
    context: Context,
    caller: Caller,
    namespace: NamespaceName,
    name: WorkloadName,
    request: ExemptionRequest,
) -> ExemptionResult:
    """Needs `patch` on the workload's owner (or the Workload), and the admin permission
    when the workload's rule lets only admins exempt. Replaces any earlier end; the longest
    exemption is the rule's."""
    now = context.clock.now()
    workload, _row = workload_to_change(context, caller, namespace, name)
    bounds = exemption_bounds(context, workload)
    if bounds.allowed_to is ExemptionRight.ADMINS:
        context.access.require_admin(caller)
    until = exemption_end(request, now=now, maximum=bounds.max_duration)
    if any(is_indefinite(found) for _, found in annotation_sources(workload)):
        raise ApiProblem(
            409,
            f"{workload.ref} is exempt indefinitely by annotation; remove that first",
            type=ProblemType.EXEMPT_BY_HAND,
        )
    # On the Workload, for an owner never written: it replaces what the owner says now.
    on_owner = context.actuator.writes_owner(workload)
    replaces = None if on_owner else owner_value(workload.owner_annotations)
    annotations = exempting(
        until=until, by=caller.username, reason=request.reason, now=now, replaces=replaces
    )
    annotated = context.actuator.annotate_owner(workload, annotations)
    context.audit(
        AuditRecord(
            at=now,
            actor=caller.username,
            action="exempt",
            target=str(workload.ref),
            reason=f"until {time_text(until)}: {request.reason}",
            namespace=namespace,
        )
    )
    view = ExemptionView(
        until=until.replace(microsecond=0),
        indefinite=False,
        on_owner=annotated.kind != "Workload",
        by=caller.username,
        reason=request.reason,
        set_at=now.replace(microsecond=0),
    )
    return ExemptionResult(
        namespace=namespace, workload=workload.ref.name, annotated=str(annotated), exemption=view
    )


def exemption_bounds(context: ApiContext, workload: WorkloadInfo) -> ExemptionBounds:
    """The bounds of the rule the workload falls under (matched as it is now); without a
    rulebook, the default rule's: a week, and anyone who may patch it."""
    if context.policy is None:
        return ExemptionBounds()
    return rule_of(context, workload).exemptions


@router.delete(
    "/workloads/{namespace}/{name}/exemption",
    summary="Remove a workload's exemption",
    responses=CHANGE_ERRORS,
)
def unexempt(
    context: Context, caller: Caller, namespace: NamespaceName, name: WorkloadName
) -> ExemptionResult:
    """Removes the exemption annotations from the owner and the Workload alike (one patch
    for a RayCluster the service suspends itself: it is its own owner). 409, nothing written,
    when a person set the exemption by hand on an owner the service never writes (a Job, a
    StatefulSet, a Deployment, a pod): the detail names the kubectl command that removes it."""
    workload, _row = workload_to_change(context, caller, namespace, name)
    writes_owner = context.actuator.writes_owner(workload)
    if not writes_owner:
        _refuse_hand_set_on_owner(workload, now=context.clock.now())
    holding = [
        on_owner
        for on_owner, found in written_sources(workload)
        if any(key in found for key in EXEMPTION_KEYS) and (writes_owner or not on_owner)
    ]
    if not holding:
        raise ApiProblem(
            409, f"{workload.ref} has no exemption", type=ProblemType.NOTHING_TO_REMOVE
        )
    annotated = [
        str(
            context.actuator.annotate_owner(workload, unexempting())
            if on_owner
            else context.actuator.annotate_workload(workload, unexempting())
        )
        for on_owner in sorted(holding, reverse=True)  # the owner first, as a user sees it
    ]
    now = context.clock.now()
    context.audit(
        AuditRecord(
            at=now,
            actor=caller.username,
            action="unexempt",
            target=str(workload.ref),
            reason="exemption removed",
            namespace=namespace,
        )
    )
    return ExemptionResult(
        namespace=namespace,
        workload=workload.ref.name,
        annotated=", ".join(annotated),
        exemption=None,
    )


def _refuse_hand_set_on_owner(workload: WorkloadInfo, *, now: datetime) -> None:
    """A 409 when the owner itself holds an exemption in force that only a person may remove:
    removing the Workload's copy would leave it applying (or bring it back)."""
    if held_on_owner(workload, now=now) is None:
        return
    owner = named(workload.ref, workload.owner)
    raise ApiProblem(
        409,
        f"{owner} is exempt by its own annotation, which this service never writes; "
        f"nothing was removed. Remove it there: {kubectl_removal(workload)}",
        type=ProblemType.EXEMPT_BY_HAND,
    )
