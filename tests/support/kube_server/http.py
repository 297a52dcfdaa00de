"""HTTP/1.1 transport: a threading server on 127.0.0.1 that logs, fails on demand, and routes.

Watches stream newline-delimited JSON in chunked encoding, so connections stay reusable. The
server tracks each connection so `close()` can end them all and join their threads.
"""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .api import ResourceApi
from .catalog import Catalog
from .discovery import discovery_document
from .errors import ApiError, bad_request
from .faults import Faults, RecordedRequest, RequestLog
from .routes import ResourceRoute, parse_route
from .selectors import object_filter
from .watch import WatchRequest, watch_events


@dataclass
class Backend:
    """Everything a request handler needs, shared by all connections."""

    catalog: Catalog
    api: ResourceApi
    faults: Faults
    requests: RequestLog
    accepted_tokens: frozenset[str] | None  # None: any bearer token, or none at all
    bookmark_interval_s: float | None
    errors: list[BaseException] = field(default_factory=list)  # unexpected exceptions (bugs)
    # Exact GET paths a test answers itself (an aggregated API such as Kueue's visibility).
    routes: dict[str, Callable[[RecordedRequest], tuple[int, Any]]] = field(default_factory=dict)

    def authenticate(self, request: RecordedRequest) -> None:
        if self.accepted_tokens is not None and request.token not in self.accepted_tokens:
            raise ApiError(401, "Unauthorized")


def _parse_body(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")


def _watch_request(route: ResourceRoute, query: dict[str, str], backend: Backend) -> WatchRequest:
    since = query.get("resourceVersion") or "0"
    timeout = query.get("timeoutSeconds")
    if not since.isdigit() or (timeout is not None and not timeout.isdigit()):
        raise bad_request(f"invalid resourceVersion {since!r} or timeoutSeconds {timeout!r}")
    matches = object_filter(
        namespace=route.namespace,
        label_selector=query.get("labelSelector"),
        field_selector=query.get("fieldSelector"),
    )
    return WatchRequest(
        route.resource,
        route.api_version,
        matches,
        resource_version=int(since) or None,
        timeout_s=float(timeout) if timeout else None,
        bookmarks=query.get("allowWatchBookmarks") == "true",
        bookmark_interval_s=backend.bookmark_interval_s,
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10  # an idle keep-alive connection frees its thread after this many seconds
    disable_nagle_algorithm = True  # headers and body are separate writes: no 40 ms ACK stall
    server: HttpServer

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the request log is the record tests read."""

    def _serve(self) -> None:
        backend = self.server.backend
        request = self._record()
        backend.requests.append(request)
        try:
            backend.authenticate(request)
            backend.faults.check(request)
            self._dispatch(backend, request)
        except ApiError as error:
            self._send_status(error)
        except (ConnectionResetError, BrokenPipeError):
            raise  # the client hung up before its answer: no server bug (HttpServer.handle_error)
        except Exception as exc:  # the one broad catch: a server bug becomes a visible 500
            backend.errors.append(exc)
            self._send_status(ApiError(500, f"test API server bug: {exc!r}"))

    def _record(self) -> RecordedRequest:
        url = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        return RecordedRequest(
            self.command,
            url.path,
            dict(parse_qsl(url.query)),
            self.headers.get("Content-Type"),
            _parse_body(raw),
            headers,
        )

    def _dispatch(self, backend: Backend, request: RecordedRequest) -> None:
        parts = [part for part in request.path.split("/") if part]
        answer = backend.routes.get(request.path.rstrip("/"))
        if request.method == "GET" and answer is not None:
            self._send_json(*answer(request))
            return
        if request.method == "GET":
            document = discovery_document(backend.catalog, parts)
            if document is not None:
                self._send_json(200, document)
                return
        route = parse_route(backend.catalog, parts)
        if request.method == "GET" and request.is_watch and route.name is None:
            self._stream(backend, _watch_request(route, dict(request.query), backend))
            return
        code, body = backend.api.handle(
            request.method,
            route,
            query=request.query,
            body=request.body,
            content_type=request.content_type,
        )
        if backend.faults.answer_lost(request):
            self._hang_up()
            return
        self._send_json(code, body)

    def _stream(self, backend: Backend, watch: WatchRequest) -> None:
        events = watch_events(
            backend.api.store, watch, force_gone=backend.faults.take_watch_expiry()
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for event in events:
                self._send_chunk(json.dumps(event).encode() + b"\n")
            self._send_chunk(b"")
        except OSError:  # the client went away mid-stream
            self.close_connection = True
        except Exception as exc:  # headers are sent: record the bug and cut the stream
            backend.errors.append(exc)
            self.close_connection = True

    def _hang_up(self) -> None:
        """Applied, but the client never hears back: the connection ends with no answer."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_status(self, error: ApiError) -> None:
        retry = {"Retry-After": str(error.retry_after)} if error.retry_after is not None else {}
        self._send_json(error.code, error.status(), retry)


class HttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._connections: dict[threading.Thread, socket.socket] = {}
        self._connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup of the address (slow offline)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-connection (a killed service process, a closed connection
        pool) resets its idle keep-alive socket: expected, so silent. Any other error is printed
        as socketserver does (BaseServer.handle_error; called inside its `except`)."""
        if isinstance(sys.exc_info()[1], ConnectionResetError | BrokenPipeError):
            return
        super().handle_error(request, client_address)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name="kube-test-server-connection",
            daemon=True,
        )
        with self._connections_lock:
            self._connections[thread] = request
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._connections_lock:
                self._connections.pop(threading.current_thread(), None)

    def close_connections(self, *, timeout_s: float = 5.0) -> None:
        """Shut every open connection (idle keep-alives included) and join its thread."""
        with self._connections_lock:
            open_connections = list(self._connections.items())
        for _, sock in open_connections:
            with contextlib.suppress(OSError):  # already closed by the client
                sock.shutdown(socket.SHUT_RDWR)
        for thread, _ in open_connections:
            thread.join(timeout_s)
