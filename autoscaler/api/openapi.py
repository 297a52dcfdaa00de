"""The OpenAPI document as the server behaves: FastAPI's, plus the authentication it cannot see.

Authentication is a middleware (`api/middleware.py`), not a FastAPI dependency, so FastAPI's
document would show every operation as open. Here each operation that needs a token says so
(`security`: the bearer scheme), by the middleware's own rule (`needs_token`), so the document
changes with `api.readsOpen` as the server does.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from autoscaler.api.middleware import needs_token

BEARER = "bearer"
SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "description": "A Kubernetes token (for example your kubeconfig's), checked with "
    "TokenReview, or one of the service's static tokens.",
}
METHODS = frozenset({"get", "put", "post", "delete", "patch", "head", "options", "trace"})


def install(app: FastAPI, *, reads_open: bool) -> None:
    """`app.openapi()` serves FastAPI's document with each operation's `security`."""
    generate = app.openapi

    def document() -> dict[str, Any]:
        if app.openapi_schema is None:
            declare_tokens(generate(), reads_open=reads_open)  # FastAPI keeps it for reuse
        return generate()

    app.openapi = document  # type: ignore[method-assign]


def declare_tokens(schema: dict[str, Any], *, reads_open: bool) -> None:
    schema.setdefault("components", {}).setdefault("securitySchemes", {})[BEARER] = SCHEME
    for path, operations in schema.get("paths", {}).items():
        for method, operation in operations.items():
            if method in METHODS and needs_token(method.upper(), path, reads_open=reads_open):
                operation["security"] = [{BEARER: []}]
