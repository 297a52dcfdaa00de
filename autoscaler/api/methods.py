"""A method no route at the path takes is answered 405 first, with every method the path does
take in `Allow` (RFC 9110, 15.5.6), before authentication: which methods a path takes is in
the OpenAPI document for anyone to read, so saying it first reveals nothing, and a probe of an
open path (`TRACE /healthz`) learns the truth rather than a 401. Then a body on GET or HEAD is
a 400: no route reads one. Both answers come before the body is read; the request limits
around this middleware close the connection after them.

The methods are the document's own (every route is in it), so `Allow` and the document agree.
They are read from the document when the app is set up (`documented_methods`), never on a
first request in the server's thread.
Starlette would answer a 405 itself with the methods of the first route whose path matched,
while one path here may be several routes (PUT and DELETE of an exemption).
"""

from __future__ import annotations

import re
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from autoscaler.api.limits import BODYLESS_METHODS, CLOSE, carries_body
from autoscaler.api.problems import problem_response

DocumentedMethods = tuple[tuple[re.Pattern[str], frozenset[str]], ...]
_PARAMETER = re.compile(r"\\\{[^/]+?\\\}")  # `{name}` in a path template, once escaped
# The keys of an OpenAPI path item that are operations (the rest: parameters, summary...).
OPERATIONS = frozenset({"get", "put", "post", "delete", "patch", "head", "options", "trace"})


class MethodsMiddleware:
    def __init__(self, app: ASGIApp, *, paths: DocumentedMethods) -> None:
        """`paths`: `documented_methods` of the app's document."""
        self._app = app
        self._paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            allowed = self.allowed(str(scope.get("path", "")))
            if allowed and scope["method"] not in allowed:
                listed = ", ".join(sorted(allowed))
                detail = f"{scope['method']} is not allowed here: {listed}"
                response = problem_response(405, detail, headers={"Allow": listed})
                await response(scope, receive, send)
                return
            method = str(scope["method"])
            if method in BODYLESS_METHODS and carries_body(scope.get("headers") or []):
                detail = f"a {method} request may not carry a body"
                await problem_response(400, detail, headers=CLOSE)(scope, receive, send)
                return
        await self._app(scope, receive, send)

    def allowed(self, path: str) -> frozenset[str]:
        """The methods of the documented path `path` falls under (FastAPI serves no HEAD of
        its own); none when it falls under no documented path."""
        for pattern, methods in self._paths:
            if pattern.fullmatch(path):
                return methods
        return frozenset()


def documented_methods(document: dict[str, Any]) -> DocumentedMethods:
    """Each documented path's pattern and the methods it takes."""
    return tuple(
        (_template(template), _methods(operations))
        for template, operations in document.get("paths", {}).items()
    )


def _template(template: str) -> re.Pattern[str]:
    """A path parameter is one segment, as Starlette's default `str` convertor reads it."""
    return re.compile(_PARAMETER.sub("[^/]+", re.escape(template)))


def _methods(operations: dict[str, Any]) -> frozenset[str]:
    return frozenset(method.upper() for method in operations if method in OPERATIONS)
