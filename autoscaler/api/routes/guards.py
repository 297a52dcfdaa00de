"""The guards' admin switches: reset the mass-idle circuit breaker, clear a contested mark.

Both live in the runtime-state ConfigMap, which the loop reads every cycle; the change and
its audit record land in one read-modify-write. Resetting a closed breaker is not an error
(like a pause, it is idempotent); clearing a mark that is not there is a 409.
"""

from __future__ import annotations

from fastapi import APIRouter

from autoscaler.api.context import Caller, Context, Reader
from autoscaler.api.lookup import find_row
from autoscaler.api.presenters import breaker_view
from autoscaler.api.problems import ApiProblem, error_responses
from autoscaler.api.schemas.requests import NamespaceName, ReasonRequest, WorkloadName
from autoscaler.api.schemas.views import BreakerView, ChangeResult
from autoscaler.domain.audit.records import AuditRecord, RuntimeState
from autoscaler.domain.guards.screen import Deed
from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.problem_types import ProblemType

router = APIRouter(prefix="/api/v1", tags=["guards"])
CHANGE_ERRORS = error_responses(401, 403, 409, 422, 503)


@router.get(
    "/breaker", summary="The mass-idle circuit breaker", responses=error_responses(401, 503)
)
def read_breaker(context: Context, reader: Reader) -> BreakerView:
    """Any valid token. The `reason` names a few of the workloads that turned idle only to
    an admin (they may belong to any tenant); anyone else reads its counts."""
    named = context.access.is_admin(reader)
    return breaker_view(context.state.read().breaker, named=named)


@router.post(
    "/breaker/reset", summary="Close the circuit breaker now (admin)", responses=CHANGE_ERRORS
)
def reset_breaker(context: Context, caller: Caller, request: ReasonRequest) -> BreakerView:
    """Deactivations resume on the next cycle (within the caps), unless the fleet still looks
    like a mass idle then, which opens it again."""
    context.access.require_admin(caller)
    record = AuditRecord(
        at=context.clock.now(),
        actor=caller.username,
        action="reset-breaker",
        target="service",
        reason=request.reason,
    )
    limit = context.settings.audit_record_limit
    state = context.state.change(
        lambda current: current.breaker_reset().recorded((record,), limit=limit)
    )
    context.logger.warning("circuit breaker reset by %s: %s", caller.username, request.reason)
    return breaker_view(state.breaker, named=True)


@router.delete(
    "/workloads/{namespace}/{name}/contested",
    summary="Clear a contested mark (admin)",
    responses=CHANGE_ERRORS,
)
def uncontest(
    context: Context, caller: Caller, namespace: NamespaceName, name: WorkloadName
) -> ChangeResult:
    """The loop may deactivate the workload again, and counts its undos afresh."""
    context.access.require_admin(caller)
    row = find_row(context.store.latest(), namespace, name)
    ref = row.ref if row is not None else WorkloadRef(namespace, name)
    now = context.clock.now()
    record = AuditRecord(
        at=now,
        actor=caller.username,
        action=Deed.UNCONTESTED.value,
        target=str(ref),
        reason="contested mark cleared by an admin",
        namespace=namespace,
    )
    limit = context.settings.audit_record_limit

    def cleared(current: RuntimeState) -> RuntimeState:
        if ref not in current.contested:
            raise ApiProblem(
                409, f"{ref} is not marked contested", type=ProblemType.NOTHING_TO_REMOVE
            )
        return current.uncontested(ref).recorded((record,), limit=limit)

    context.state.change(cleared)
    context.logger.warning("contested mark of %s cleared by %s", ref, caller.username)
    return ChangeResult(
        namespace=namespace,
        workload=ref.name,
        action=record.action,
        by=caller.username,
        reason=record.reason,
        at=now,
    )
