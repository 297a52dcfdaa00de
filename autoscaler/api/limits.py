"""The request body cap, enforced before anyone reads the body: a pure ASGI middleware.

A declared `Content-Length` over the cap is answered 413 at once, without reading a byte of
the body. A body without one (chunked) is counted as the app receives it: the chunk that
crosses the cap is never handed on, the app stops there, and the caller gets 413. Either way
the server holds at most the cap (plus one chunk) of a body in memory, whoever sends it.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from autoscaler.api.problems import problem_response

CLOSE = {"Connection": "close"}  # the rest of the body is never read


class BodyTooLarge(HTTPException):
    """Raised out of `receive` once the body passed the cap. An HTTPException, so FastAPI's
    body reading lets it through to the problem handler; any other app gets the middleware's
    own 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, too_large(limit), headers=CLOSE)


def too_large(limit: int) -> str:
    return f"the request body is larger than {limit} bytes"


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self._app = app
        self._max = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = declared_length(scope.get("headers") or [])
        if declared is not None and declared > self._max:
            await self._too_large(scope, receive, send)
            return
        started = False

        async def send_tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._app(scope, _capped(receive, self._max), send_tracked)
        except BodyTooLarge:
            if started:  # the app answered without the body, then read on: nothing to add
                return
            await self._too_large(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem_response(413, too_large(self._max), headers=CLOSE)
        await response(scope, receive, send)


def declared_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    """The Content-Length header as a number; None when absent or not a number."""
    for name, value in headers:
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


def _capped(receive: Receive, limit: int) -> Receive:
    received = 0

    async def receive_capped() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise BodyTooLarge(limit)
        return message

    return receive_capped
