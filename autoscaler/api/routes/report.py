"""The savings report: what the deactivations reclaimed and cost, from the audit trail and the
latest snapshot (definitions in docs/SAVINGS.md). Per-owner figures live here, not in the
Prometheus metrics."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Query

from autoscaler.api.context import Context, Reader
from autoscaler.api.problems import error_responses, invalid
from autoscaler.api.schemas.requests import duration_schema, positive_duration
from autoscaler.api.schemas.savings import SavingsFigures, SavingsReport, SavingsRow
from autoscaler.domain.audit.savings import Savings, per_namespace, per_queue, savings
from autoscaler.domain.text import LABEL_PATTERN

router = APIRouter(prefix="/api/v1", tags=["report"])
LONGEST = timedelta(days=90)


@router.get(
    "/report",
    summary="GPU-hours held idle and reclaimed, waits shortened, regrets, per namespace, "
    "queue and owner",
    responses=error_responses(401, 403, 422),
)
def report(
    context: Context,
    reader: Reader,
    since: Annotated[
        str,
        Query(  # checked by `_period`, whose 422 names the field and the maximum
            json_schema_extra=duration_schema(LONGEST, description="How far back: 90m, 24h, 7d."),
            examples=["7d"],
        ),
    ] = "7d",
    namespace: Annotated[
        str | None, Query(max_length=63, pattern=LABEL_PATTERN, examples=["team-a"])
    ] = None,
) -> SavingsReport:
    """Over the period ending now, as far back as the audit trail reaches (it is bounded).
    Unless reads are open: one namespace needs `list` on its Kueue Workloads, the whole
    cluster that right in every namespace."""
    context.access.require_read(reader, namespace)
    span = _period(since)
    now = context.clock.now()
    snapshot = context.store.latest()
    rows = snapshot.workloads if snapshot is not None else ()
    found = savings(
        context.state.read().audit, rows, since=now - span, now=now, namespace=namespace
    )
    return _view(found, namespace)


def _period(text: str) -> timedelta:
    try:
        return positive_duration(text, longest=LONGEST)
    except ValueError as exc:
        raise invalid("since", str(exc)) from None


def _view(found: Savings, namespace: str | None) -> SavingsReport:
    return SavingsReport(
        since=found.since,
        until=found.until,
        namespace=namespace,
        total=SavingsFigures.of(found.total),
        by_namespace=[SavingsRow.row(g, f) for g, f in found.by(per_namespace).items()],
        by_queue=[SavingsRow.row(g, f) for g, f in found.by(per_queue).items()],
        by_owner=[SavingsRow.row(g, f) for g, f in found.by_owner.items()],
    )
