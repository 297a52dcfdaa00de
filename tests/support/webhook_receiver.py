"""A real HTTP receiver of our notifications on 127.0.0.1, as a team's webhook endpoint
would be: it records each request, verifies `X-Idle-GPU-Signature` with the shared secret
(answering 401 when it does not verify, as a receiver should), and can be told to fail the
next requests with a status or to hang past the client's timeout; with `echo_path`, every
answer repeats the path it was called on (its reason phrase and body), as some receivers do.

    receiver = WebhookReceiver(secret=SECRET)   # or the `webhook_receiver` fixture
    receiver.fail_next(2, status=500)
    ...
    [request] = receiver.wait_for(1)
    assert request.verified and request.json()["kind"] == "warning"

A hang waits on an event that `stop()` (and `release()`) sets, so no handler outlives a test.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SIGNATURE_HEADER = "X-Idle-GPU-Signature"
DELIVERY_HEADER = "X-Idle-GPU-Delivery"
WEBHOOK_SECRET = b"a-webhook-secret-of-at-least-32-bytes!"  # the fixture's, shared with senders
HANG_LIMIT_S = 30.0  # a hung reply is released by then at the latest


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # names in lower case: HTTP's are case-insensitive
    body: bytes
    verified: bool | None  # None: the receiver has no secret, so nothing was checked
    status: int  # what the receiver answered (0: it hung until released)

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def delivery(self) -> str | None:
        return self.header(DELIVERY_HEADER)


def verify(secret: bytes, *, header: str | None, body: bytes) -> bool:
    """What a receiver does: recompute HMAC-SHA256 over `"<t>." + body` and compare."""
    parts = dict(p.split("=", 1) for p in (header or "").split(",") if "=" in p)
    if "t" not in parts or "v1" not in parts:
        return False
    expected = hmac.new(secret, parts["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts["v1"])


class WebhookReceiver:
    def __init__(self, *, secret: bytes | None = None, echo_path: bool = False) -> None:
        self.secret = secret
        self.echo_path = echo_path  # answer with the path in the reason phrase and the body
        self._received: list[Received] = []
        self._failures: list[int] = []  # statuses to answer next, in order
        self._hangs = 0
        self._hanging = 0  # handlers holding a reply right now
        self._released = threading.Event()
        self._arrived = threading.Condition()
        self._http: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._http is not None, "receiver not started"
        return f"http://127.0.0.1:{self._http.server_address[1]}/hooks/idle-gpu"

    def fail_next(self, count: int, *, status: int = 500) -> None:
        with self._arrived:
            self._failures += [status] * count

    def hang_next(self, count: int = 1) -> None:
        """Hold the next replies until `release()` or `stop()`: past any client timeout."""
        with self._arrived:
            self._hangs += count

    def release(self) -> None:
        self._released.set()

    @property
    def hanging(self) -> int:
        """Requests held unanswered right now, waiting for `release()`."""
        with self._arrived:
            return self._hanging

    @property
    def received(self) -> list[Received]:
        with self._arrived:
            return list(self._received)

    def wait_for(self, count: int, *, timeout: float = 10.0) -> list[Received]:
        """The first `count` requests, once they have arrived (fails after `timeout`)."""
        with self._arrived:
            arrived = self._arrived.wait_for(lambda: len(self._received) >= count, timeout)
            assert arrived, f"{len(self._received)} requests arrived, expected {count}"
            return list(self._received[:count])

    def answer(self, *, headers: dict[str, str], body: bytes, path: str) -> int:
        """Record the request and choose the reply's status (0: hang)."""
        verified = None
        if self.secret is not None:
            verified = verify(self.secret, header=headers.get(SIGNATURE_HEADER.lower()), body=body)
        with self._arrived:
            status = 0 if self._hangs else self._failures.pop(0) if self._failures else 200
            self._hangs = max(0, self._hangs - 1)
            self._hanging += status == 0  # counted as it arrives: held from here on
            if status == 200 and verified is False:
                status = 401
            self._received.append(Received(path, headers, body, verified, status))
            self._arrived.notify_all()
        if status == 0:
            self._released.wait(HANG_LIMIT_S)
            with self._arrived:
                self._hanging -= 1
        return status

    def start(self) -> None:
        handler = type("BoundHookHandler", (HookHandler,), {"receiver": self})
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._http.daemon_threads = False  # server_close() joins the handlers
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, name="webhook-rx"
        )
        self._thread.start()

    def stop(self) -> None:
        self._released.set()
        if self._http is None or self._thread is None:
            return
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)
        self._http = self._thread = None

    def __enter__(self) -> WebhookReceiver:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class HookHandler(BaseHTTPRequestHandler):
    receiver: WebhookReceiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        status = self.receiver.answer(
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
            path=self.path,
        )
        if status == 0:
            return  # hung: the client gave up long ago; answer nothing
        # A receiver that tells what it was called on, as some do in their errors.
        echo = f"no hook at {self.path}" if self.receiver.echo_path else ""
        self.send_response(status, echo or None)
        self.send_header("Content-Length", str(len(echo.encode())))
        self.end_headers()
        self.wfile.write(echo.encode())

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: tests read `received`
