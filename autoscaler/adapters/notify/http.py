"""One POST to a notification target, over the standard library (no client dependency).

Every outcome is mapped here, at one boundary, into success or `NotifyError(retry=…)`: what
may pass if tried again (no connection, a timeout, a 5xx, 429 Too Many Requests) is retried
by the dispatcher; what will fail the same way again (any other 4xx, a redirect, a URL that
is not http(s)) is not. Messages name the target, never its URL: a Slack webhook URL is a
secret.
"""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import timedelta
from typing import IO

from autoscaler import __version__
from autoscaler.core.errors import NotifyError
from autoscaler.domain.text import clip

RETRY_STATUSES = frozenset({408, 425, 429})  # and every 5xx
_EXCERPT = 120  # of a refusal's body, in the error message


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A webhook that redirects is misconfigured; following it would resend (or drop) the
    signed body somewhere nobody named, so the 3xx is reported instead."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects())


def post(
    url: str, *, body: bytes, headers: Mapping[str, str], timeout: timedelta, target: str
) -> None:
    """POST `body` once; returns on any 2xx, raises NotifyError for everything else."""
    if not url.lower().startswith(("http://", "https://")):
        raise NotifyError(f"target {target}: the URL is not http or https", retry=False)
    request = urllib.request.Request(url, data=body, method="POST")
    for name, value in {"User-Agent": f"idle-gpu-autoscaler/{__version__}", **headers}.items():
        request.add_header(name, value)
    try:
        with _OPENER.open(request, timeout=timeout.total_seconds()) as reply:
            reply.read()  # drained, so the connection closes cleanly
    except urllib.error.HTTPError as refused:
        raise _refusal(target, refused) from refused
    except (urllib.error.URLError, http.client.HTTPException, OSError) as failed:
        # no connection, TLS failure, a timeout, a reply cut short: another try may pass
        reason = getattr(failed, "reason", failed)
        raise NotifyError(f"target {target}: {clip(str(reason), _EXCERPT)}", retry=True) from failed
    except ValueError as bad:  # a malformed URL or header
        raise NotifyError(f"target {target}: {clip(str(bad), _EXCERPT)}", retry=False) from bad


def _refusal(target: str, refused: urllib.error.HTTPError) -> NotifyError:
    retry = refused.code >= 500 or refused.code in RETRY_STATUSES
    with refused:  # closes the reply's socket (an unclosed one warns)
        excerpt = _excerpt(refused.fp)
    return NotifyError(f"target {target}: HTTP {refused.code} {excerpt}".rstrip(), retry=retry)


def _excerpt(body: IO[bytes] | None) -> str:
    if body is None:
        return ""
    try:
        return clip(body.read(_EXCERPT).decode("utf-8", "replace").strip(), _EXCERPT)
    except OSError:  # the body was cut short: the status says enough
        return ""
