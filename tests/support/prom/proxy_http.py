"""The HTTP side of the auth proxy: a TLS server whose handler authenticates, faults and forwards.

The handler asks its `Gatekeeper` (the AuthProxy) what to do, so this module knows nothing of tests.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Protocol
from urllib.parse import SplitResult, parse_qs, urlsplit

from .faults import FaultPlan

QUERY_PATHS = frozenset({"/api/v1/query", "/api/v1/query_range"})
PLAIN_TEXT = "text/plain; charset=utf-8"
_QUIET_ERRORS = (ConnectionError, ssl.SSLError, TimeoutError)  # clients that gave up on us


class Gatekeeper(Protocol):
    upstream: SplitResult
    faults: FaultPlan
    stopping: threading.Event

    def verdict(self, token: str | None) -> tuple[int, str] | None: ...

    def record(
        self,
        *,
        method: str,
        path: str,
        params: dict[str, list[str]],
        token: str | None,
        status: int,
    ) -> None: ...


class TlsServer(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the workers: no thread outlives the proxy

    def __init__(self, address: tuple[str, int], gatekeeper: Gatekeeper, context: ssl.SSLContext):
        handler = type("BoundProxyHandler", (ProxyHandler,), {"gatekeeper": gatekeeper})
        super().__init__(address, handler)
        self.context = context

    def finish_request(self, request: Any, client_address: Any) -> None:
        # The TLS handshake runs in the worker thread, never in the accept loop.
        tls_socket = self.context.wrap_socket(request, server_side=True)
        try:
            super().finish_request(tls_socket, client_address)
        finally:
            tls_socket.close()  # the wrapper owns the descriptor now, not `request`

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out or reject our CA are part of the tests


class ProxyHandler(BaseHTTPRequestHandler):
    gatekeeper: ClassVar[Gatekeeper]
    timeout = 30

    def do_GET(self) -> None:
        self._handle(b"")

    def do_POST(self) -> None:
        self._handle(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _handle(self, body: bytes) -> None:
        url = urlsplit(self.path)
        token = _bearer(self.headers.get("Authorization"))
        refusal = self.gatekeeper.verdict(token)
        if refusal:
            status = self._reply(refusal[0], PLAIN_TEXT, refusal[1].encode())
        elif url.path in QUERY_PATHS:
            status = self._faulty_query(body)
        else:
            status = self._reply(*self._forward(body))
        params = parse_qs(url.query) | parse_qs(body.decode(errors="replace"))
        self.gatekeeper.record(
            method=self.command, path=url.path, params=params, token=token, status=status
        )

    def _faulty_query(self, body: bytes) -> int:
        plan = self.gatekeeper.faults.next_plan()
        if plan.delay_s and self.gatekeeper.stopping.wait(plan.delay_s):
            return 0  # shutting down: drop the request
        if plan.canned:
            return self._reply(plan.canned.status, plan.canned.content_type, plan.canned.body)
        status, content_type, payload = self._forward(body)
        if plan.transforms and content_type.startswith("application/json"):
            document = json.loads(payload)
            for transform in plan.transforms:
                transform(document)
            payload = json.dumps(document).encode()
        return self._reply(status, content_type, payload)

    def _forward(self, body: bytes) -> tuple[int, str, bytes]:
        upstream = http.client.HTTPConnection(self.gatekeeper.upstream.netloc, timeout=30)
        headers = {"Content-Type": self.headers.get("Content-Type", "")} if body else {}
        try:
            upstream.request(self.command, self.path, body=body or None, headers=headers)
            response = upstream.getresponse()
            return response.status, response.getheader("Content-Type", ""), response.read()
        except OSError as exc:
            return 502, PLAIN_TEXT, f"upstream: {exc}\n".encode()
        finally:
            upstream.close()

    def _reply(self, status: int, content_type: str, payload: bytes) -> int:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except _QUIET_ERRORS:
            pass  # the client gave up (e.g. its timeout beat an injected delay)
        return status


def _bearer(header: str | None) -> str | None:
    scheme, _, credential = (header or "").partition(" ")
    if scheme.lower() != "bearer" or not credential.strip():
        return None
    return credential.strip()
