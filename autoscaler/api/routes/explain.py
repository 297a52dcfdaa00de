"""Why a workload is judged as it is: which rule it falls under, and why each earlier rule
did not take it, answered from the latest snapshot (the same pure matching the loop ran)."""

from __future__ import annotations

from fastapi import APIRouter

from autoscaler.api.context import Context, Reader
from autoscaler.api.lookup import require_row
from autoscaler.api.presenters import owner_kind_view, waiters_view, workload_view
from autoscaler.api.problems import error_responses
from autoscaler.api.schemas.requests import NamespaceName, WorkloadName
from autoscaler.api.schemas.views import ExplainView, MissView
from autoscaler.domain.policy.decisions import gpu_models_of

router = APIRouter(prefix="/api/v1", tags=["workloads"])


@router.get(
    "/workloads/{namespace}/{name}/explain",
    summary="Which rule a workload falls under, and why each earlier rule did not match",
    responses=error_responses(401, 403, 404, 409, 422, 503),
)
def explain_workload(
    context: Context, reader: Reader, namespace: NamespaceName, name: WorkloadName
) -> ExplainView:
    """Authorized like reading the workload: unless reads are open, `list` on Kueue
    Workloads in the namespace. A waiter (or a head) of another namespace is named only to
    a caller who may read that namespace too."""
    context.access.require_read(reader, namespace)
    snapshot = context.store.latest()
    row = require_row(snapshot, namespace, name)
    gate = snapshot.kueue_gate if snapshot is not None else None
    reading = context.access.reading(reader)
    view = workload_view(row, now=context.clock.now(), gate=gate, may_read=reading)
    seen = snapshot.waiters if snapshot is not None else None
    waiters = waiters_view(seen, row.ref, may_read=reading)
    kinds = context.policy.actionable_kinds if context.policy is not None else None
    kind = owner_kind_view(row.info.owner, enabled_kinds=kinds)
    if context.policy is None or snapshot is None:  # no rules given: the decision says it all
        return ExplainView(
            workload=view,
            rule=row.decision.rule.name,
            matched=True,
            misses=[],
            waiters=waiters,
            owner_kind=kind,
        )
    models = gpu_models_of(row.info, snapshot.usage)
    found = context.policy.match(row.info, snapshot.usage)
    return ExplainView(
        workload=view,
        rule=found.rule.name,
        matched=found.known,
        unknown=found.unknown,
        gpu_models=sorted(models),
        misses=[MissView(rule=miss.rule, why=miss.why) for miss in found.misses],
        waiters=waiters,
        owner_kind=kind,
    )
