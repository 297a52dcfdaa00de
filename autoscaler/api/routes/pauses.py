"""The kill switch: pause and resume the whole service (admin) or one namespace.

Kept in the runtime-state ConfigMap, which the loop reads every cycle and again before each
action. While paused, decisions are still made and reported as "paused"; nothing is patched.
Pausing what is paused, or resuming what runs, is not an error: a kill switch is idempotent.
"""

from __future__ import annotations

from fastapi import APIRouter

from autoscaler.api.context import ApiContext, Caller, Context, Reader
from autoscaler.api.presenters import pauses_view
from autoscaler.api.problems import ApiProblem, error_responses
from autoscaler.api.schemas.requests import NamespaceName, ReasonRequest
from autoscaler.api.schemas.views import PausesView
from autoscaler.domain.access import Identity
from autoscaler.domain.audit.records import EVERYTHING, AuditRecord, PauseNote
from autoscaler.domain.problem_types import ProblemType
from autoscaler.domain.tenant_names import MayRead

router = APIRouter(prefix="/api/v1", tags=["pauses"])
CHANGE_ERRORS = error_responses(401, 403, 409, 422, 503)
PAUSE_ERRORS = error_responses(401, 403, 404, 409, 422, 503)


@router.get("/pauses", summary="The pauses in force", responses=error_responses(401, 503))
def list_pauses(context: Context, reader: Reader) -> PausesView:
    """Any valid token: the service's pause, and the pauses of the namespaces the caller may
    read (who set each and why is its tenants' business)."""
    return pauses_view(context.state.read(), shown=_readable(context, reader))


@router.post("/pause", summary="Pause the whole service (admin)", responses=CHANGE_ERRORS)
def pause_service(context: Context, caller: Caller, request: ReasonRequest) -> PausesView:
    context.access.require_admin(caller)
    return _change(context, caller, scope=EVERYTHING, pause=True, reason=request.reason)


@router.post("/resume", summary="Resume the whole service (admin)", responses=CHANGE_ERRORS)
def resume_service(context: Context, caller: Caller, request: ReasonRequest) -> PausesView:
    context.access.require_admin(caller)
    return _change(context, caller, scope=EVERYTHING, pause=False, reason=request.reason)


@router.post("/namespaces/{namespace}/pause", summary="Pause one namespace", responses=PAUSE_ERRORS)
def pause_namespace(
    context: Context, caller: Caller, namespace: NamespaceName, request: ReasonRequest
) -> PausesView:
    """Needs `patch` on workloads.kueue.x-k8s.io in that namespace, which must exist."""
    context.access.require_namespace_change(caller, namespace)
    if not context.cluster.namespace_exists(namespace):  # a typo must not look paused
        raise ApiProblem(
            404,
            f"namespace {namespace} does not exist",
            type=ProblemType.NO_SUCH_NAMESPACE,
        )
    return _change(context, caller, scope=namespace, pause=True, reason=request.reason)


@router.post(
    "/namespaces/{namespace}/resume", summary="Resume one namespace", responses=CHANGE_ERRORS
)
def resume_namespace(
    context: Context, caller: Caller, namespace: NamespaceName, request: ReasonRequest
) -> PausesView:
    """Needs `patch` on workloads.kueue.x-k8s.io in that namespace."""
    context.access.require_namespace_change(caller, namespace)
    return _change(context, caller, scope=namespace, pause=False, reason=request.reason)


def _change(
    context: ApiContext, caller: Identity, *, scope: str, pause: bool, reason: str
) -> PausesView:
    """One read-modify-write: the pause and its audit record land together."""
    now = context.clock.now()
    record = AuditRecord(
        at=now,
        actor=caller.username,
        action="pause" if pause else "resume",
        target="service" if scope == EVERYTHING else f"namespace {scope}",
        reason=reason,
        namespace=None if scope == EVERYTHING else scope,
    )
    note = PauseNote(by=caller.username, reason=reason, at=now)
    limit = context.settings.audit_record_limit
    state = context.state.change(
        lambda current: (current.paused(scope, note) if pause else current.resumed(scope)).recorded(
            (record,), limit=limit
        )
    )
    context.logger.warning("%s %s by %s: %s", record.action, record.target, caller.username, reason)
    return pauses_view(state, shown=_readable(context, caller))


def _readable(context: ApiContext, who: Identity | None) -> MayRead:
    """Whether a namespace's pause is shown to `who`: every one to a caller who may read
    every namespace (one review), else each namespace asked on its own (few are paused)."""
    if context.access.may_read(who, None):
        return lambda _namespace: True
    return context.access.reading(who)
