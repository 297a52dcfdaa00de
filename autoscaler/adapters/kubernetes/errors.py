"""How the client's failures become our errors: an HTTP answer by its status, a transport
failure by whether the request may have reached the API server.

A refused connection or a connect timeout means nothing was sent: `ClusterUnavailable`.
A read timeout or a connection dropped after sending means the server may have applied the
request: `AnswerLost`, so a write's caller settles it from the object, not by assuming.
"""

from __future__ import annotations

import json
from typing import Any

import urllib3

from autoscaler.core.errors import (
    AnswerLost,
    ClusterError,
    ClusterUnavailable,
    Conflict,
    Forbidden,
    NotFound,
    WatchExpired,
)

# Raised after the request went out: the server may have acted on it.
_AFTER_SENDING = (
    urllib3.exceptions.ReadTimeoutError,
    urllib3.exceptions.ProtocolError,  # connection aborted or reset, incomplete body
)


def transport_error(exc: Exception, *, what: str) -> ClusterUnavailable:
    """A urllib3 or socket failure; a retry wrapper is looked through to its cause."""
    cause = exc.reason if isinstance(exc, urllib3.exceptions.MaxRetryError) else exc
    if isinstance(cause, _AFTER_SENDING):
        return AnswerLost(f"{what}: sent, but the answer was lost: {cause}")
    return ClusterUnavailable(f"{what}: Kubernetes API unreachable: {exc}")


def status_error(status: int, *, what: str, message: str, retry_after: str | None) -> ClusterError:
    """An HTTP error answer: the server refused, so nothing was applied."""
    text = f"{what}: {status} {message}".strip()
    if status == 404:
        return NotFound(text)
    if status == 409:
        return Conflict(text)
    if status in (401, 403):
        return Forbidden(text)
    if status == 410:
        return WatchExpired(text)
    if status in (0, 429) or status >= 500:
        hint = f" (retry after {retry_after}s)" if retry_after else ""
        return ClusterUnavailable(text + hint)
    return ClusterError(text)


def api_exception_error(exc: Any, *, what: str) -> ClusterError:
    """A `kubernetes.client.ApiException`: its status, Status message and Retry-After."""
    status = int(exc.status or 0)
    return status_error(
        status, what=what, message=_status_message(exc), retry_after=_retry_after(exc)
    )


def _status_message(exc: Any) -> str:
    """The Status object's message when the body is one, else the HTTP reason."""
    try:
        body = json.loads(exc.body or "")
    except (TypeError, ValueError):
        return str(exc.reason or "")
    return str(body.get("message") or exc.reason or "") if isinstance(body, dict) else ""


def _retry_after(exc: Any) -> str | None:
    headers = exc.headers or {}
    value = headers.get("Retry-After")
    return str(value) if value else None
