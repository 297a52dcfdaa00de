"""The FastAPI app factory: routes, the error boundary and authentication, nothing global."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import APIRouter, FastAPI

from autoscaler.api import openapi, problems
from autoscaler.api.context import ApiContext
from autoscaler.api.limits import RequestLimitMiddleware
from autoscaler.api.methods import MethodsMiddleware, documented_methods
from autoscaler.api.middleware import AuthenticationMiddleware
from autoscaler.api.routes import (
    activation,
    decisions,
    exemptions,
    explain,
    guards,
    health,
    links,
    pauses,
    report,
    snoozes,
    workloads,
)
from autoscaler.core.ports import Authenticator

DESCRIPTION = """\
See which GPU workloads are idle and why, exempt one for a while, pause the service or one
namespace, and bring a deactivated workload back.

Changes need `Authorization: Bearer <token>`: a Kubernetes token (for example your kubeconfig's),
checked with TokenReview; what it may change is asked with SubjectAccessReview. Errors are
`Problem` bodies; a 422 names each bad field. The "keep it" links in a warning
(`/v1/links/snooze/{token}`) need no token: the signed token is their credential, and they
answer small HTML pages for a browser.
"""


TAGS = [
    {"name": "workloads", "description": "The latest cycle's view of every workload."},
    {"name": "exemptions", "description": "Keep a workload from being deactivated."},
    {
        "name": "snoozes",
        "description": "Push a warned workload's planned stop back, from the API or "
        "a signed link in the warning.",
    },
    {"name": "pauses", "description": "The kill switch."},
    {"name": "activation", "description": "Reactivate, or deactivate now."},
    {"name": "decisions", "description": "The audit trail."},
    {"name": "guards", "description": "The circuit breaker and contested marks."},
    {"name": "report", "description": "What deactivations saved, and cost."},
    {"name": "health", "description": "Probes and metrics."},
]
ROUTES = (  # every module's `router`, the probes last
    workloads,
    explain,
    exemptions,
    snoozes,
    links,
    pauses,
    activation,
    decisions,
    guards,
    report,
    health,
)


def create_app(
    context: ApiContext,
    *,
    authenticator: Authenticator,
    routers: Sequence[APIRouter] = (),
) -> FastAPI:
    """`routers`: more endpoints under the same authentication and error boundary (e.g. the
    KEDA metrics-api router)."""
    app = FastAPI(
        docs_url="/docs" if context.settings.serve_docs else None,  # Swagger UI from a CDN
        redoc_url=None,  # ReDoc too would load from a CDN
        generate_unique_id_function=lambda route: route.name,  # operationId: `exempt`, ...
        title="idle-gpu-autoscaler",
        version="v1",
        description=DESCRIPTION,
        openapi_tags=TAGS,
    )
    app.state.context = context
    openapi.install(app, reads_open=context.settings.reads_open)
    problems.install(app, logger=context.logger)
    for module in ROUTES:
        app.include_router(module.router)
    for router in routers:
        app.include_router(router)
    app.add_middleware(
        AuthenticationMiddleware,
        authenticator=authenticator,
        reads_open=context.settings.reads_open,
        logger=context.logger,
    )
    # Built here, once every route is in, not lazily by the first request on the server's
    # thread: the document is then ready (`app.openapi_schema`) before any request.
    document = app.openapi()
    app.add_middleware(MethodsMiddleware, paths=documented_methods(document))  # 405 before 401
    # Added last, so outermost: an oversized or ambiguous request is refused before
    # authentication is asked, and an answer given before the body ends closes the connection.
    app.add_middleware(
        RequestLimitMiddleware,
        max_body_bytes=context.settings.max_request_bytes,
        max_header_bytes=context.settings.max_header_bytes,
    )
    return app
