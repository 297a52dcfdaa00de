"""Reading workloads: the latest snapshot, filtered, or one workload by name."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from autoscaler.api.context import Context, Reader
from autoscaler.api.listing import ListingFilter
from autoscaler.api.lookup import require_row
from autoscaler.api.presenters import workload_view
from autoscaler.api.problems import error_responses
from autoscaler.api.schemas.requests import NamespaceName, WorkloadName
from autoscaler.api.schemas.views import WorkloadList, WorkloadView
from autoscaler.domain.models import State
from autoscaler.domain.text import LABEL_PATTERN, SUBDOMAIN_PATTERN

router = APIRouter(prefix="/api/v1", tags=["workloads"])


@router.get(
    "/workloads",
    summary="List workloads with their state and decision",
    response_model=WorkloadList,
    responses=error_responses(401, 403, 422, 503),
)
def list_workloads(
    context: Context,
    reader: Reader,
    namespace: Annotated[
        str | None, Query(max_length=63, pattern=LABEL_PATTERN, examples=["team-a"])
    ] = None,
    queue: Annotated[
        str | None, Query(max_length=253, pattern=SUBDOMAIN_PATTERN, examples=["user-queue"])
    ] = None,
    state: Annotated[State | None, Query(examples=["idle"])] = None,
) -> Response:
    """Every workload of the latest cycle, optionally only one namespace, queue or state.
    Unless reads are open: `list` on Kueue Workloads in that namespace, or in every
    namespace when none is given."""
    context.access.require_read(reader, namespace)
    wanted = ListingFilter(namespace=namespace, queue=queue, state=state)
    body = context.listings.body(
        context.store.latest(),
        wanted,
        now=context.clock.now(),
        may_read=context.access.reading(reader),
    )
    return Response(body, media_type="application/json")


@router.get(
    "/workloads/{namespace}/{name}",
    summary="Inspect one workload, by Workload name or owner name",
    response_model=WorkloadView,
    responses=error_responses(401, 403, 404, 409, 422, 503),
)
def get_workload(
    context: Context, reader: Reader, namespace: NamespaceName, name: WorkloadName
) -> Response:
    """`name` is the Workload's name or its owner's, such as the RayCluster's name. Unless
    reads are open: `list` on Kueue Workloads in the namespace, asked before the lookup."""
    context.access.require_read(reader, namespace)
    snapshot = context.store.latest()
    row = require_row(snapshot, namespace, name)
    gate = snapshot.kueue_gate if snapshot is not None else None
    # Rendered here, on this worker thread: a returned model would be validated and encoded
    # in a second trip to a worker thread, one more wait for the GIL (as the listing is).
    reading = context.access.reading(reader)
    view = workload_view(row, now=context.clock.now(), gate=gate, may_read=reading)
    return Response(view.model_dump_json(by_alias=True), media_type="application/json")
