"""The OpenAPI document as the server behaves: FastAPI's, plus what its middlewares add.

Authentication is a middleware (`api/middleware.py`), not a FastAPI dependency, so FastAPI's
document would show every operation as open. Here each operation that needs a token says so
(`security`: the bearer scheme), by the middleware's own rule (`needs_token`), so the document
changes with `api.readsOpen` as the server does. The request limits (`api/limits.py`) answer
any operation 431 when its request line and headers pass `api.maxHeaderBytes` (a long path
parameter can do it), so each operation lists that answer too.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from autoscaler.api.methods import OPERATIONS
from autoscaler.api.middleware import needs_token

BEARER = "bearer"
SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "description": "A Kubernetes token (for example your kubeconfig's), checked with "
    "TokenReview, or one of the service's static tokens.",
}


HEAD_TOO_LARGE = {
    "description": "The request line and headers are larger than api.maxHeaderBytes",
    "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
}


def install(app: FastAPI, *, reads_open: bool) -> None:
    """`app.openapi()` serves FastAPI's document with each operation's `security` and the
    request limits' answer. `create_app` calls it once every route is in, so the document
    is built when the app is set up, not on a first request."""
    generate = app.openapi

    def document() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()  # FastAPI keeps it for reuse
            declare_tokens(schema, reads_open=reads_open)
            declare_head_limit(schema)
        return generate()

    app.openapi = document  # type: ignore[method-assign]


def declare_tokens(schema: dict[str, Any], *, reads_open: bool) -> None:
    schema.setdefault("components", {}).setdefault("securitySchemes", {})[BEARER] = SCHEME
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            if method in OPERATIONS and needs_token(method.upper(), path, reads_open=reads_open):
                operation["security"] = [{BEARER: []}]


def declare_head_limit(schema: dict[str, Any]) -> None:
    for operations in schema.get("paths", {}).values():
        for method, operation in operations.items():
            if method in OPERATIONS:
                operation.setdefault("responses", {}).setdefault("431", HEAD_TOO_LARGE)
