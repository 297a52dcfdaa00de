"""The one boundary where failures become HTTP answers.

Routes raise `ApiProblem` (or let our ClusterErrors through); request validation errors come
from FastAPI. Every error body is a `Problem`, RFC 9457 problem details served as
`application/problem+json` with `type`, `title`, `status` and `detail`. A problem a client acts
on names its kind in `type` (`ProblemType`: `autoscaler/domain/problem_types.py`, docs/API.md
"Problem types"), so no client reads the detail's words; the rest are `about:blank`. The 422
names each bad field, up to SHOWN_PROBLEMS of them (as the KEDA scaler's errors) and each
clipped, so it stays small whatever was sent. A client error never becomes a 5xx: 503 means
Kubernetes could not be reached, 500 a bug (and is logged).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from autoscaler.core.errors import ClusterError, ClusterUnavailable, Conflict, NotFound
from autoscaler.domain.problem_types import BLANK, ProblemType
from autoscaler.domain.text import SHOWN_PROBLEMS, clip

TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Content Too Large",
    422: "Unprocessable Content",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


PROBLEM_JSON = "application/problem+json"
TYPE_DESCRIPTION = (
    "A URI naming the problem type, compared as a string: `about:blank` when the status says "
    "all a client acts on (`detail` then tells what happened), else one of the examples, each "
    'explained at its address (docs/API.md, "Problem types"). A 404 from a path no route '
    "serves is `about:blank`."
)
BODY_PARSE_ERROR = "There was an error parsing the body"  # FastAPI's words for broken JSON
PYDANTIC_VALUE_ERROR = "Value error, "  # what pydantic puts before a validator's own message
MAX_FIELD = 128  # characters of a field's place in a 422: `body.` and a key that was sent
MAX_MESSAGE = 256  # characters of what is wrong with it


class FieldProblem(BaseModel):
    field: str = Field(description="Where the bad value is, e.g. `body.duration`.")
    message: str


class Problem(BaseModel):
    """Every error answer: RFC 9457 problem details (`application/problem+json`)."""

    type: str = Field(
        BLANK, description=TYPE_DESCRIPTION, examples=[BLANK, *(t.value for t in ProblemType)]
    )
    status: int = Field(examples=[404])
    title: str = Field(examples=["Not Found"])
    detail: str = Field(examples=["no workload team-a/my-cluster"])
    fields: list[FieldProblem] = Field(
        default_factory=list, description="For 422: each bad field and what is wrong with it."
    )


class ApiProblem(Exception):
    """A refusal as a Problem; `type` one of `ProblemType` where a client acts on its kind."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        type: str = BLANK,  # RFC 9457's name for it, as in the body
        fields: Sequence[FieldProblem] = (),
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.type = type
        self.fields = list(fields)


def invalid(field: str, message: str) -> ApiProblem:
    """A 422 about one field, for checks that need more than the schema (time, settings)."""
    return ApiProblem(
        422, f"{field}: {message}", fields=[FieldProblem(field=field, message=message)]
    )


def problem_response(
    status: int,
    detail: str,
    *,
    type: str = BLANK,  # RFC 9457's name for it, as in the body
    fields: Sequence[FieldProblem] = (),
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    body = Problem(
        type=type,
        status=status,
        title=TITLES.get(status, "Error"),
        detail=detail,
        fields=list(fields),
    )
    return JSONResponse(
        body.model_dump(mode="json"), status_code=status, headers=headers, media_type=PROBLEM_JSON
    )


def error_responses(
    *statuses: int, reasons: Mapping[int, str] | None = None
) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` entries for a route's error answers; `reasons` adds, after a status's
    title, when the route gives it besides what the title says (a schema-valid request refused
    by a bound the schema cannot state, such as one that depends on the clock or the rules)."""
    told = reasons or {}
    return {
        status: {
            "model": Problem,  # keeps Problem among the components
            "description": ": ".join(
                [TITLES.get(status, "Error"), *([told[status]] if status in told else [])]
            ),
            "content": {PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status in statuses
    }


def install(app: FastAPI, *, logger: logging.Logger) -> None:
    """Register the handlers that turn every failure into a Problem."""

    async def on_problem(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiProblem)
        return problem_response(exc.status, exc.detail, type=exc.type, fields=exc.fields)

    async def on_validation(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return validation_problem(exc.errors())

    async def on_http(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 400 and exc.detail == BODY_PARSE_ERROR:  # bad input like others
            fields = [FieldProblem(field="body", message=str(exc.detail))]
            return problem_response(422, f"body: {exc.detail}", fields=fields)
        return problem_response(exc.status_code, str(exc.detail), headers=exc.headers)

    async def on_cluster(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ClusterError)
        status = _cluster_status(exc)
        if status >= 500:
            logger.warning("API request failed at the Kubernetes API: %s", exc)
        headers = {"Retry-After": "5"} if status == 503 else None
        return problem_response(status, str(exc), headers=headers)

    async def on_bug(_request: Request, exc: Exception) -> JSONResponse:
        logger.error("API bug", exc_info=exc)
        return problem_response(500, "internal error; see the service log")

    app.add_exception_handler(ApiProblem, on_problem)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(ClusterError, on_cluster)
    app.add_exception_handler(Exception, on_bug)


def _cluster_status(exc: ClusterError) -> int:
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Conflict):
        return 409
    if isinstance(exc, ClusterUnavailable):
        return 503
    return 502  # e.g. Forbidden: our own RBAC refused, the deployment (not the caller) is wrong


def validation_problem(errors: Sequence[Any]) -> JSONResponse:
    """The 422 of a request's validation errors: the first SHOWN_PROBLEMS, each clipped, and
    how many more there were, so that its size stays bounded whatever was sent."""
    fields = [_field_problem(error) for error in errors[:SHOWN_PROBLEMS]]
    detail = "; ".join(f"{f.field}: {f.message}" for f in fields) or "invalid request"
    if len(errors) > SHOWN_PROBLEMS:
        detail += f"; and {len(errors) - SHOWN_PROBLEMS} more"
    return problem_response(422, detail, fields=fields)


def _field_problem(error: dict[str, Any]) -> FieldProblem:
    """Where (a key that was sent may be any length) and what, both clipped and escaped."""
    location = ".".join(str(part) for part in error.get("loc", ()))
    message = str(error.get("msg", "invalid")).removeprefix(PYDANTIC_VALUE_ERROR)
    return FieldProblem(
        field=clip(location, MAX_FIELD) if location else "request",
        message=clip(message, MAX_MESSAGE),
    )
