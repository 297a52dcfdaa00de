"""Bounded requests, judged from the head before anyone reads the body: a pure ASGI middleware,
outermost, so each refusal comes before authentication. Every refusal closes the connection.

- A request line plus headers over `maxHeaderBytes` is 431. h11 (uvicorn's parser) bounds
  only a head still arriving (`max_incomplete_event_size`: 400 once its buffer passes the
  limit); a whole head that arrives in one read is parsed whatever its size.
- Both Content-Length and Transfer-Encoding is 400: RFC 9112 §6.3 lets a server refuse such a
  request (a smuggling attempt; h11 would let chunked win) and asks it to close after
  answering. Differing Content-Lengths never get here: h11 refuses them (400, closed).
- A body on GET or HEAD is 400 (`methods.py`, after the method itself is judged, so a method
  the path does not take is a 405 whatever it carries): no route reads one, so it could only
  be read and thrown away.
- A declared `Content-Length` over `maxRequestBytes` is 413 at once, without reading a byte of
  the body. A body without one (chunked) is counted as the app receives it: the chunk that
  crosses the cap is never handed on, the app stops there, and the caller gets 413. Either way
  the server holds at most the cap (plus one chunk) of a body in memory, whoever sends it.
- Any answer that starts before the app has received the whole body (a 401, a 413, a route
  that reads no body) carries `Connection: close`, so uvicorn closes the connection after it:
  otherwise h11 reads and discards the rest of the body, however long, to reuse it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from autoscaler.api.problems import problem_response

Headers = Sequence[tuple[bytes, bytes]]
CLOSE = {"Connection": "close"}  # the rest of the request is never read
BODYLESS_METHODS = frozenset({"GET", "HEAD"})


class BodyTooLarge(HTTPException):
    """Raised out of `receive` once the body passed the cap. An HTTPException, so FastAPI's
    body reading lets it through to the problem handler; any other app gets the middleware's
    own 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, too_large(limit), headers=CLOSE)


def too_large(limit: int) -> str:
    return f"the request body is larger than {limit} bytes"


@dataclass(frozen=True)
class Refusal:
    status: int
    detail: str


class RequestLimitMiddleware:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, max_header_bytes: int) -> None:
        self._app = app
        self._max_body = max_body_bytes
        self._max_head = max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        refused = refusal(scope, max_header_bytes=self._max_head, max_body_bytes=self._max_body)
        if refused is not None:
            response = problem_response(refused.status, refused.detail, headers=CLOSE)
            await response(scope, receive, send)
            return
        body = _BodyProgress(expected=carries_body(scope.get("headers") or []))
        try:
            await self._app(scope, body.counting(receive, self._max_body), body.closing(send))
        except BodyTooLarge:
            if body.answered:  # the app answered without the body, then read on: nothing to add
                return
            response = problem_response(413, too_large(self._max_body), headers=CLOSE)
            await response(scope, receive, send)


def refusal(scope: Scope, *, max_header_bytes: int, max_body_bytes: int) -> Refusal | None:
    """Why the request is refused from its head alone, if it is."""
    headers: Headers = scope.get("headers") or []
    if head_size(scope) > max_header_bytes:
        return Refusal(
            431, f"the request line and headers are larger than {max_header_bytes} bytes"
        )
    declared = declared_length(headers)
    if is_chunked(headers) and declared is not None:
        return Refusal(400, "a request may carry Content-Length or Transfer-Encoding, not both")
    if declared is not None and declared > max_body_bytes:
        return Refusal(413, too_large(max_body_bytes))
    return None


def head_size(scope: Scope) -> int:
    """The request line and headers as parsed, in bytes (`METHOD target HTTP/1.1`, each
    `name: value` and each line end; the whitespace h11 trims around values not counted)."""
    query: bytes = scope.get("query_string", b"")
    target = len(scope.get("raw_path", b"")) + (len(query) + 1 if query else 0)
    line = len(str(scope.get("method", ""))) + target + len(" HTTP/1.1\r\n") + 1
    fields = sum(len(name) + len(value) + 4 for name, value in scope.get("headers") or [])
    return line + fields + 2


def declared_length(headers: Headers) -> int | None:
    """The Content-Length header as a number; None when absent or not a number."""
    for name, value in headers:
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


def carries_body(headers: Headers) -> bool:
    """Whether the framing announces a body: chunked, or a Content-Length above 0."""
    return is_chunked(headers) or bool(declared_length(headers))


def is_chunked(headers: Headers) -> bool:
    """Whether the request carries a Transfer-Encoding header (its body is then chunked)."""
    return any(name.lower() == b"transfer-encoding" for name, _ in headers)


@dataclass
class _BodyProgress:
    """What the app has received of a request's body, and whether it has begun its answer."""

    expected: bool
    received: int = 0
    ended: bool = False
    answered: bool = False

    def counting(self, receive: Receive, limit: int) -> Receive:
        async def receive_counted() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                self.received += len(message.get("body", b""))
                if self.received > limit:
                    raise BodyTooLarge(limit)
                self.ended = not message.get("more_body", False)
            return message

        return receive_counted

    def closing(self, send: Send) -> Send:
        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.answered = True
                if self.expected and not self.ended:
                    message = with_close(message)
            await send(message)

        return send_closing


def with_close(start: Message) -> Message:
    """A response start that asks the connection to close after it."""
    kept = [(n, v) for n, v in start.get("headers", []) if n.lower() != b"connection"]
    return {**start, "headers": [*kept, (b"connection", b"close")]}
