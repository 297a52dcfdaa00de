"""The metrics-api endpoint: the same targets and answers as the gRPC scaler, over HTTP.

    GET /api/v1/keda/metrics?namespace=team-a&workload=rc-1[&profile=fast]
    GET /api/v1/keda/metrics?namespace=team-a&podSelector=app%3Dllm
    → 200 {"value": 37.5, "active": true, "metricName": "...", "reason": "..."}

KEDA's metrics-api trigger reads the number at `valueLocation: value`. Unknown is never a
number: 503 (unknown data), 404 (no such Workload) or 400 (bad parameters), so KEDA holds
the replicas. The query is read exactly (`parse_metadata(exact=True)`), and the OpenAPI
document states it as one object (`query_schema`), so its bounds are the reading's own.
Bearer tokens are checked by the injected `authenticate` (TokenReview or the static token, as
for the REST API); without one, every token is refused. The answer tells
whether a workload exists, its utilization and why it is judged so: `authorize` asks whether
the caller may read the namespace of the target (the composition root's answer: the
listing's read right, or only the usernames `keda.metricsApiReaders` names), after the
parameters are read and before any lookup, so a refused caller gets 403 whatever exists.
An `authenticate` or `authorize` that raises ClusterError (a review unreachable) makes a
503, never a value.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from fastapi import APIRouter, HTTPException, Request, status
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from autoscaler.core.errors import ClusterError
from autoscaler.domain.access import Identity, Verdict
from autoscaler.domain.text import some
from autoscaler.keda.answers import KedaAnswers
from autoscaler.keda.metadata import MetadataError, query_schema
from autoscaler.keda.targets import Activity

Authenticate = Callable[[str], Identity | None]  # the token's caller; None: not valid
Authorize = Callable[[Identity, str], Verdict]  # may this caller read that namespace?
PREFIX = "/api/v1/keda"  # the metrics path is PREFIX + "/metrics"
VALUE_LOCATION = "value"
# Every refusal the route gives (no 422: nothing FastAPI validates, the query is read here).
ERROR_STATUSES = (400, 401, 403, 404, 503)
_STATUS = {
    Activity.UNKNOWN: status.HTTP_503_SERVICE_UNAVAILABLE,
    Activity.NOT_FOUND: status.HTTP_404_NOT_FOUND,
}


def deny_all(_token: str) -> Identity | None:
    return None


def refuse_all(_who: Identity, _namespace: str) -> Verdict:
    return Verdict(False, "no authorizer is configured")


class KedaMetric(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    value: float = Field(
        description="Peak GPU utilization over the window, percent; 100 while exempt, paused "
        "or in grace; 0 with no running pods. Above the threshold exactly when active."
    )
    active: bool = Field(description="What IsActive answers for the same target.")
    metric_name: str = Field(description="The gRPC scaler's metric name for this target.")
    reason: str = Field(description="Why, in words, with the numbers.")


def keda_router(
    *,
    answers: KedaAnswers,
    authenticate: Authenticate = deny_all,
    authorize: Authorize = refuse_all,
    require_token: bool = True,
    prefix: str = PREFIX,
    error_responses: Mapping[int | str, dict[str, Any]] | None = None,
) -> APIRouter:
    """Mount with `app.include_router(router)`, no extra prefix. `error_responses`: how the
    app that mounts it documents each of ERROR_STATUSES (its error bodies)."""
    router = APIRouter(prefix=prefix, tags=["keda"])
    documented: Mapping[int | str, dict[str, Any]] = error_responses or {
        code: {} for code in ERROR_STATUSES
    }

    @router.get(
        "/metrics",
        response_model=KedaMetric,
        response_model_by_alias=True,
        responses=dict(documented),
        summary="Idle signal for KEDA's metrics-api trigger (valueLocation: value)",
        operation_id="keda_metrics",  # `metrics` is the service's own /metrics
        openapi_extra={"parameters": [_documented_query(answers.profiles)]},
    )
    def metrics(request: Request) -> KedaMetric:
        # Sync: `authenticate` may call the API server, so it runs in a worker. The bearer
        # scheme is the document's `security` (api/openapi.py), read here rather than as a
        # FastAPI parameter, which would document a 422 the route never gives.
        authorization = request.headers.get("authorization")
        who = _caller(authorization, authenticate=authenticate, required=require_token)
        params = request.query_params
        repeated = sorted({key for key in params if len(params.getlist(key)) > 1})
        if repeated:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, f"repeated: {some(repeated)}")
        try:
            target = answers.target(
                dict(params), default_namespace=None, caller="metrics-api", exact=True
            )
        except MetadataError as exc:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, str(exc)) from exc
        if who is not None:
            _check_right(who, target.namespace, authorize=authorize)
        judgement = answers.judge(target)
        if not judgement.known:
            raise HTTPException(_STATUS[judgement.activity], f"{target}: {judgement.reason}")
        return KedaMetric(
            value=judgement.value,
            active=judgement.activity is Activity.ACTIVE,
            metric_name=target.metric_name,
            reason=judgement.reason,
        )

    return router


def _documented_query(profiles: Collection[str]) -> dict[str, Any]:
    """OpenAPI 3.1, `style: form, explode: true`: each property of the object is a query
    parameter of its own, as KEDA's URL gives them, and the object can say "exactly one of"."""
    return {
        "name": "target",
        "in": "query",
        "required": True,
        "style": "form",
        "explode": True,
        "description": "The target, each property its own query parameter: `namespace` and "
        "exactly one of `workload` and `podSelector`, with an optional `profile`. Each is "
        "given once, not empty and without surrounding whitespace.",
        "schema": query_schema(profiles),
    }


def _caller(header: str | None, *, authenticate: Authenticate, required: bool) -> Identity | None:
    """The caller of a valid bearer token; None when tokens are not required."""
    if not required:
        return None
    scheme, _, token = (header or "").partition(" ")
    try:
        valid = scheme.lower() == "bearer" and bool(token.strip())
        who = authenticate(token.strip()) if valid else None
    except ClusterError as exc:  # TokenReview unreachable: unknown, so KEDA holds its replicas
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, f"cannot check the token: {exc}"
        ) from exc
    if who is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "a valid bearer token is required",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return who


def _check_right(who: Identity, namespace: str, *, authorize: Authorize) -> None:
    try:
        verdict = authorize(who, namespace)
    except ClusterError as exc:  # SubjectAccessReview unreachable: unknown, hold the replicas
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, f"cannot check the right: {exc}"
        ) from exc
    if not verdict.allowed:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"{who.username} may not read workloads in {namespace}: {verdict.reason}",
        )
