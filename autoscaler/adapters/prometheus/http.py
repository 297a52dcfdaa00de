"""The HTTP session every Prometheus/Thanos request goes through: TLS, token, tenancy, replies.

prometheus-api-client only checks the status code and then drops the rest of the envelope,
so a response hook on our session looks at every reply first: Prometheus `warnings`
(partial data) are kept for the caller, and anything that is not a successful Prometheus
reply (error envelope, plain-text 401/403 from an auth proxy, HTML login page) becomes
`ExchangeError` with a readable reason before the library sees it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import requests
from requests.auth import AuthBase
from urllib3.util.retry import Retry

from autoscaler import __version__
from autoscaler.adapters.prometheus.replies import Result, parse_envelope
from autoscaler.settings.tree import PrometheusSettings

RETRY_ON_STATUS = (502, 503, 504)  # a proxy or querier restarting; 429 waits are not ours to take
RETRY_BACKOFF_S = 0.2
_EXCERPT = 200
_CHUNK = 1 << 20  # bytes read at a time: a large body grows one buffer, never held twice


class ExchangeError(Exception):
    """A request that could not be sent, or a reply without usable data; the message says why."""


class BearerTokenFile(AuthBase):
    """Sends the token in `path`, read again whenever the file changes (tokens rotate)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._token = ""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self.token()}"
        return request

    def token(self) -> str:
        """The file's token; a stat per request, a read only when the file changed."""
        with self._lock:
            stat = self._path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
            if stamp != self._stamp:
                self._token = self._path.read_text(encoding="utf-8").strip()
                self._stamp = stamp
            if not self._token:
                raise ExchangeError(f"bearer token file {self._path} is empty")
            return self._token


class ReplyInspector:
    """A response hook: raises `ExchangeError` for bad replies and keeps warnings per thread.
    The body it parsed is what the reply's `json()` then returns, so the client library does
    not parse a large body a second time (seconds for a big fleet's slot matrix). It reads
    the body itself, into one growing buffer: `requests` would hold it twice while joining
    its chunks (150 MB for one signal's slot matrix at 10,000 workloads); `content` is then
    empty."""

    def __init__(self) -> None:
        self._local = threading.local()

    def forget(self) -> None:
        """Start collecting warnings afresh (call before a read)."""
        self._local.warnings = []

    def warnings(self) -> tuple[str, ...]:
        """Warnings of this thread's replies since `forget()`."""
        return tuple(getattr(self._local, "warnings", ()))

    def __call__(self, response: requests.Response, *args: object, **kwargs: object) -> None:
        if response.is_redirect:
            return  # requests follows it; the final reply is inspected on its own
        text = _body(response)
        body = _json_or_none(text)
        if not isinstance(body, dict):
            raise ExchangeError(_describe_non_json(response, text))
        if body.get("status") != "success" or response.status_code != 200:
            raise ExchangeError(_describe_error(response, body, text))
        data = body.get("data")
        if not isinstance(data, dict) or not _is_list(data.get("result")):
            raise ExchangeError("Prometheus replied success without a result")
        # This one reply's json() answers with the parse above (an instance attribute: the
        # Response class is untouched).
        vars(response)["json"] = lambda **_: body
        found = body.get("warnings") or []
        if found:
            self._local.warnings = [*self.warnings(), *map(str, found)]


def build_session(settings: PrometheusSettings, *, inspector: ReplyInspector) -> requests.Session:
    """A session that verifies TLS (the CA bundle, else the system's), authenticates and
    always carries the Thanos tenancy namespace when one is configured."""
    session = requests.Session()
    session.verify = _verification(settings)
    if settings.bearer_token_file is not None:
        session.auth = BearerTokenFile(settings.bearer_token_file)
    if settings.tenancy_namespace:
        session.params = {"namespace": settings.tenancy_namespace}
    session.headers.update(
        {"Accept": "application/json", "User-Agent": f"idle-gpu-autoscaler/{__version__}"}
    )
    session.hooks["response"].append(inspector)
    return session


def build_retry(retries: int) -> Retry:
    """`retries` quick retries of connection errors, read timeouts and 502/503/504, GET only;
    the last reply is returned (not raised) so the inspector can say what it was."""
    return Retry(
        total=retries,
        connect=retries,
        read=retries,
        status=retries,
        other=0,
        allowed_methods=frozenset({"GET"}),
        status_forcelist=RETRY_ON_STATUS,
        backoff_factor=RETRY_BACKOFF_S,
        backoff_max=1.0,
        respect_retry_after_header=False,
        raise_on_status=False,
    )


def _verification(settings: PrometheusSettings) -> bool | str:
    if settings.insecure_skip_verify:
        return False
    if settings.ca_file is not None:
        return str(settings.ca_file)
    return True


def _body(response: requests.Response) -> bytearray:
    body = bytearray()
    for chunk in response.raw.stream(_CHUNK, decode_content=True):
        body += chunk
    return body


def _json_or_none(body: bytearray) -> Any:
    try:
        return parse_envelope(body)
    except ValueError:
        return None


def _is_list(result: object) -> bool:
    return result.is_list() if isinstance(result, Result) else isinstance(result, list)


def _describe_non_json(response: requests.Response, body: bytearray) -> str:
    kind = response.headers.get("Content-Type", "no content type")
    return (
        f"HTTP {response.status_code} {response.reason} ({kind}): {_excerpt(_text(response, body))}"
    )


def _describe_error(response: requests.Response, body: dict[str, Any], text: bytearray) -> str:
    error_type = body.get("errorType") or "error"
    error = body.get("error") or _excerpt(_text(response, text))
    return f"HTTP {response.status_code} {response.reason}: {error_type}: {error}"


def _text(response: requests.Response, body: bytearray) -> str:
    return body.decode(response.encoding or "utf-8", errors="replace")


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT else flat[:_EXCERPT] + "…"
