"""The audit trail: the loop's actions and every change made through the API, newest first."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from autoscaler.api.context import Context, Reader
from autoscaler.api.presenters import audit_view
from autoscaler.api.problems import error_responses
from autoscaler.api.schemas.views import AuditPage
from autoscaler.domain.text import LABEL_PATTERN

router = APIRouter(prefix="/api/v1", tags=["decisions"])


@router.get(
    "/decisions",
    summary="Recent decisions and actions, newest first, paged",
    responses=error_responses(401, 403, 422, 503),
)
def list_decisions(
    context: Context,
    reader: Reader,
    limit: Annotated[int, Query(ge=1, le=200, description="Records per page.")] = 50,
    offset: Annotated[int, Query(ge=0, le=100_000, description="Records to skip.")] = 0,
    namespace: Annotated[
        str | None, Query(max_length=63, pattern=LABEL_PATTERN, examples=["team-a"])
    ] = None,
) -> AuditPage:
    """Kept in the runtime-state ConfigMap (shared by every replica, bounded in length):
    deactivations with the observed peak and the threshold, dry-run "would deactivate"
    decisions as they first appear, and who exempted, paused or reactivated what, and why.
    Unless reads are open: one namespace's records need `list` on its Kueue Workloads, the
    whole trail the admin permission. A waiter of another namespace a reason names is
    named only to a caller who may read that namespace (or to the admin)."""
    context.access.require_audit_read(reader, namespace)
    # The whole trail is the admin's (or open): every name told. One namespace's: another
    # namespace's waiter a reason names is told only to who may read it.
    reading = context.access.reading(reader) if namespace is not None else _every_namespace
    records = context.state.read().audit
    if namespace is not None:
        records = tuple(record for record in records if record.namespace == namespace)
    page = records[offset : offset + limit]
    following = offset + limit
    return AuditPage(
        items=[audit_view(record, may_read=reading) for record in page],
        total=len(records),
        offset=offset,
        limit=limit,
        next_offset=following if following < len(records) else None,
    )


def _every_namespace(namespace: str) -> bool:
    return True
