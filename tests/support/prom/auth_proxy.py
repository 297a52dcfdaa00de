"""A TLS reverse proxy in front of Prometheus that checks bearer tokens like kube-rbac-proxy.

    with AuthProxy(upstream=prom.url, tls=make_tls_files(tmp), token="t1") as proxy:
        client = MyAdapter(url=proxy.url, ca_bundle=proxy.ca_bundle, token="t1")
        proxy.token = "t2"                      # rotation: "t1" now gets 401
        proxy.denied.add("viewer")              # 403
        proxy.inject_warnings("partial response", times=1)
        len(proxy.queries())                    # queries seen (with their Thanos `namespace`)
        proxy.stop(); proxy.start()             # down (connection refused), then back, same port

401 and 403 are plain text, as OpenShift's kube-rbac-proxy and oauth-proxy answer. Faults act only
on the query endpoints (/api/v1/query, /api/v1/query_range); everything else is passed through.
"""

from __future__ import annotations

import re
import ssl
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from . import faults
from .proxy_http import QUERY_PATHS, TlsServer
from .tls import TlsFiles


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    params: dict[str, list[str]]
    token: str | None
    status: int = 0

    @property
    def query(self) -> str | None:
        return self.params.get("query", [None])[0]

    @property
    def namespace(self) -> str | None:
        """Thanos querier's tenancy parameter (kube-rbac-proxy would enforce it; we record it)."""
        return self.params.get("namespace", [None])[0]


RANGE_SELECTOR = re.compile(r"\[(\d+)(ms|s|m|h)\]")  # a range, not a subquery's [range:step]


def ranges_in(requests: Iterable[SeenRequest]) -> set[tuple[str, str]]:
    """Every range selector the requests' queries wrote, as (amount, unit): `[60s]` is
    ("60", "s")."""
    return {found for r in requests for found in RANGE_SELECTOR.findall(r.query or "")}


@dataclass
class _Log:
    seen: list[SeenRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class AuthProxy:
    def __init__(self, *, upstream: str, tls: TlsFiles, token: str) -> None:
        self.upstream = urlsplit(upstream)
        self.tls = tls
        self.token = token
        self.denied: set[str] = set()
        self.faults = faults.FaultPlan()
        self.stopping = threading.Event()
        self._log = _Log()
        self._http: TlsServer | None = None
        self._thread: threading.Thread | None = None
        self._port = 0  # chosen at the first start, kept for restarts

    @property
    def url(self) -> str:
        assert self._http is not None, "proxy not started"
        return f"https://127.0.0.1:{self._http.server_address[1]}"

    @property
    def running(self) -> bool:
        return self._http is not None

    @property
    def ca_bundle(self) -> Path:
        return self.tls.ca_bundle

    # -- what the test sees and steers -------------------------------------------------------

    def requests(self) -> list[SeenRequest]:
        with self._log.lock:
            return list(self._log.seen)

    def queries(self) -> list[SeenRequest]:
        return [r for r in self.requests() if r.path in QUERY_PATHS]

    def forget_requests(self) -> None:
        with self._log.lock:
            self._log.seen.clear()

    def inject_warnings(self, *messages: str, times: int | None = None) -> None:
        self.faults.add(faults.warnings_rule(list(messages), times))

    def respond_with_error(
        self,
        *,
        status: int = 422,
        error_type: str = "execution",
        error: str = "query failed",
        times: int | None = 1,
    ) -> None:
        """Prometheus' error envelope (422 bad query, 503 unavailable/timeout)."""
        rule = faults.error_envelope_rule(
            status=status, error_type=error_type, error=error, times=times
        )
        self.faults.add(rule)

    def respond_with_status(
        self, status: int = 503, *, body: str = "upstream unavailable", times: int | None = 1
    ) -> None:
        """A bare 5xx with a plain-text body, as a router or proxy in the way answers."""
        self.faults.add(faults.status_rule(status=status, body=body, times=times))

    def delay(self, seconds: float, *, times: int | None = 1) -> None:
        self.faults.add(faults.delay_rule(seconds, times))

    def serve_nan(self, *, times: int | None = None) -> None:
        self.faults.add(faults.nan_rule(times))

    def serve_value(self, value: float, *, times: int | None = None) -> None:
        """Every sample of the next `times` answers reads `value` (another engine's answer)."""
        self.faults.add(faults.value_rule(value, times))

    def reset(self) -> None:
        """Drop every fault and the request log (the token and deny list stay)."""
        self.faults.reset()
        self.forget_requests()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.tls.cert, self.tls.key)
        self.stopping.clear()
        self._http = TlsServer(("127.0.0.1", self._port), self, context)
        self._port = self._http.server_address[1]
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, name="auth-proxy"
        )
        self._thread.start()

    def stop(self) -> None:
        if self._http is None or self._thread is None:
            return
        self.stopping.set()  # cuts injected delays short so worker threads end
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)
        self._http = self._thread = None

    def __enter__(self) -> AuthProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what the HTTP handler asks (proxy_http.Gatekeeper) -----------------------------------

    def record(
        self,
        *,
        method: str,
        path: str,
        params: dict[str, list[str]],
        token: str | None,
        status: int,
    ) -> None:
        with self._log.lock:
            self._log.seen.append(SeenRequest(method, path, params, token, status))

    def verdict(self, token: str | None) -> tuple[int, str] | None:
        """None when allowed, else the status and plain-text body kube-rbac-proxy would send."""
        if token is not None and token in self.denied:
            return 403, "Forbidden (user=system:serviceaccount:test:client, verb=get, resource=)\n"
        if token is None or token != self.token:
            return 401, "Unauthorized\n"
        return None
