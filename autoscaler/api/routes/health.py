"""Probes and the service's own metrics; always open, whatever `readsOpen` says."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from autoscaler.api.context import Context
from autoscaler.api.presenters import guards_view
from autoscaler.api.schemas.views import Health, Readiness

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is alive")
def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    summary="Ready once the first cycle has finished",
    response_model=Readiness,
    response_model_exclude_none=True,  # no `guards` key before the screen first reported
    responses={503: {"model": Readiness, "description": "No cycle has finished yet."}},
)
def readyz(context: Context) -> Readiness | JSONResponse:
    """Not ready only until the first snapshot. Afterwards it stays ready through outages, so
    the API and its kill switch stay reachable; the body says whether the last cycle reached
    the cluster and Prometheus, and whether the guards (circuit breaker) hold actions back."""
    snapshot = context.store.latest()
    if snapshot is None:
        body = Readiness(ready=False, errors=["no cycle has finished yet"])
        return JSONResponse(body.model_dump(mode="json", by_alias=True), status_code=503)
    return Readiness(
        ready=True,
        cycle=snapshot.cycle,
        taken_at=snapshot.taken_at,
        cluster_ok=snapshot.cluster_ok,
        metrics_ok=snapshot.metrics_ok,
        errors=list(snapshot.errors),
        guards=guards_view(snapshot.guards) if snapshot.guards else None,
    )


@router.get(
    "/metrics",
    summary="Prometheus metrics of the service",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
def metrics(context: Context) -> Response:
    return Response(generate_latest(context.registry), media_type=CONTENT_TYPE_LATEST)
