"""Authentication before anything else: a pure ASGI middleware.

It looks only at the method, the path and the raw Authorization header, so a request that
needs a token and has no valid one gets 401 before FastAPI reads its body or other headers,
whatever they hold. Every method that is not GET/HEAD/OPTIONS needs a token on every path;
reads need one too when reads are closed, except the probes, /metrics and the API docs.
A signed "keep it" link (`/v1/links/snooze/<token>`, GET and POST) needs none: the signed
token in its path is its credential, checked by its route.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import anyio.to_thread
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from autoscaler.api.problems import problem_response
from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import Authenticator
from autoscaler.domain.access import Identity
from autoscaler.engine.notify.links import LINK_PATH

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
ALWAYS_OPEN = frozenset({"/healthz", "/readyz", "/metrics", "/openapi.json", "/docs"})
MAX_TOKEN_LENGTH = 16384  # far above any real JWT; bounds what we forward to the API server
IDENTITY = "identity"  # key in the request's state
LINK_METHODS = frozenset({"GET", "HEAD", "POST"})


class AuthenticationMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticator: Authenticator,
        reads_open: bool,
        logger: logging.Logger,
    ) -> None:
        self._app = app
        self._authenticator = authenticator
        self._reads_open = reads_open
        self._log = logger

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._needs_token(scope):
            await self._app(scope, receive, send)
            return
        token = bearer_token(scope.get("headers") or [])
        if token is None:
            await _unauthorized("a bearer token is required")(scope, receive, send)
            return
        try:
            identity = await self._identity(token)
        except ClusterError as exc:
            self._log.warning("cannot review a token: %s", exc)
            response = problem_response(
                503, f"cannot verify the token now: {exc}", headers={"Retry-After": "5"}
            )
            await response(scope, receive, send)
            return
        if identity is None:
            await _unauthorized("the bearer token is not valid")(scope, receive, send)
            return
        scope.setdefault("state", {})[IDENTITY] = identity
        await self._app(scope, receive, send)

    async def _identity(self, token: str) -> Identity | None:
        """The token's user: from what is at hand when it is (no trip to a worker thread, whose
        wait for the GIL is what a request feels during a cycle), else reviewed off the loop."""
        recalled = self._authenticator.recall(token)
        if recalled is not None:
            return recalled.identity
        return await anyio.to_thread.run_sync(self._authenticator.authenticate, token)

    def _needs_token(self, scope: Scope) -> bool:
        method, path = str(scope.get("method", "GET")), str(scope.get("path", ""))
        return needs_token(method, path, reads_open=self._reads_open)


def needs_token(method: str, path: str, *, reads_open: bool) -> bool:
    """Whether a request needs a valid token; the OpenAPI document's `security` says the same
    of each route (`api/openapi.py`)."""
    if is_link(method, path):
        return False
    if method not in SAFE_METHODS:
        return True
    return not reads_open and path not in ALWAYS_OPEN


def is_link(method: str, path: str) -> bool:
    """A snooze link's own path (one token segment after LINK_PATH), nothing under or beside it."""
    token = path.removeprefix(LINK_PATH)
    return (
        method in LINK_METHODS and path.startswith(LINK_PATH) and bool(token) and "/" not in token
    )


def bearer_token(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The token of the first Authorization header, if it is a usable Bearer one."""
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            token = token.strip()
            if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_LENGTH:
                return None
            return token
    return None


def _unauthorized(detail: str) -> JSONResponse:
    return problem_response(
        401, detail, headers={"WWW-Authenticate": 'Bearer realm="idle-gpu-autoscaler"'}
    )
