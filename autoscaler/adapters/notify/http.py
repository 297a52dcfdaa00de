"""One POST to a notification target, over the standard library (no client dependency).

Every outcome is mapped here, at one boundary, into success or `NotifyError(retry=…)`: what
may pass if tried again (no connection, a timeout, a 5xx, 429 Too Many Requests) is retried
by the dispatcher; what will fail the same way again (any other 4xx, a redirect, a URL that
is not http(s)) is not. Messages name the target, never its URL: a Slack webhook URL is a
secret; and a receiver's answer is known by its status only.
"""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
from collections.abc import Mapping
from datetime import timedelta
from urllib.parse import urlsplit

from autoscaler import __version__
from autoscaler.core.errors import NotifyError
from autoscaler.domain.text import clip

RETRY_STATUSES = frozenset({408, 425, 429})  # and every 5xx
_EXCERPT = 120  # characters of a failure's reason, at most, in the error message
_ANSWER_READ = 64 * 1024  # bytes of a 2xx answer read before the connection closes
_SHORTEST_SECRET = 4  # shorter pieces of a URL (`/`, `v1`) are not worth redacting


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A webhook that redirects is misconfigured; following it would resend (or drop) the
    signed body somewhere nobody named, so the 3xx is reported instead."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects())


def post(
    url: str, *, body: bytes, headers: Mapping[str, str], timeout: timedelta, target: str
) -> None:
    """POST `body` once; returns on any 2xx, raises NotifyError for everything else. The
    error names the target and says why in words of our own: the URL, which the client's
    exceptions quote, is redacted, and the receiver's answer is told by its status alone (a
    receiver may echo the path it was called on, a Slack webhook's secret). The client's
    exception is not chained, so no traceback carries it either."""
    if not url.lower().startswith(("http://", "https://")):
        raise NotifyError(f"target {target}: the URL is not http or https", retry=False)
    try:
        request = urllib.request.Request(url, data=body, method="POST")
        for name, value in {"User-Agent": f"idle-gpu-autoscaler/{__version__}", **headers}.items():
            request.add_header(name, value)
        with _OPENER.open(request, timeout=timeout.total_seconds()) as reply:
            reply.read(_ANSWER_READ)  # never shown; the connection is not reused
    except urllib.error.HTTPError as refused:
        raise _refusal(target, refused) from None
    except (http.client.InvalidURL, ValueError, OverflowError) as bad:
        # a malformed URL or header, a port past 65535: trying again cannot help
        raise NotifyError(f"target {target}: {_why(bad, url)}", retry=False) from None
    except (urllib.error.URLError, http.client.HTTPException, OSError) as failed:
        # no connection, TLS failure, a timeout, a reply cut short: another try may pass
        raise NotifyError(f"target {target}: {_why(failed, url)}", retry=True) from None


def _refusal(target: str, refused: urllib.error.HTTPError) -> NotifyError:
    retry = refused.code >= 500 or refused.code in RETRY_STATUSES
    with refused:  # closes the reply's socket (an unclosed one warns); its body is not read
        return NotifyError(f"target {target}: HTTP {refused.code}", retry=retry)


def _why(failure: Exception, url: str) -> str:
    """The failure in a few words without the URL: an OS error's own text (a refused
    connection, a timeout, a certificate), else the exception's class."""
    reason = getattr(failure, "reason", failure)
    if isinstance(reason, OSError):
        text = reason.strerror or str(reason) or type(reason).__name__
    else:
        text = type(failure).__name__
    return clip(_redacted(text, url), _EXCERPT)


def _redacted(text: str, url: str) -> str:
    """`text` with the URL and each piece of it that could be secret (its path, a segment of
    the path, the query, a user or password) replaced by `…`."""
    try:
        parts = urlsplit(url)
        pieces = [parts.netloc, parts.path, parts.query, parts.fragment, *parts.path.split("/")]
    except ValueError:
        pieces = []
    for piece in sorted({url, *pieces}, key=len, reverse=True):
        if len(piece) >= _SHORTEST_SECRET:
            text = text.replace(piece, "…")
    return text
