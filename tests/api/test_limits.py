"""Bounded requests: the body cap acts before the body is read, and connections are
answered without Nagle's delay (TCP_NODELAY on every accepted socket)."""

from __future__ import annotations

import asyncio
import json
import socket

from starlette.types import Message, Receive, Scope, Send

from autoscaler.api.limits import BodyLimitMiddleware
from autoscaler.api.server import ApiServer
from tests.api.rig import TOKENS, ApiRig

EXEMPTION = "/api/v1/workloads/team-a/alice-rc/exemption"
CAP = 64 * 1024
TWENTY_MB = 20 * 1024 * 1024


def request_head(rig: ApiRig, framing: str) -> bytes:
    return (
        f"PUT {EXEMPTION} HTTP/1.1\r\nHost: test\r\n"
        f"Authorization: Bearer {TOKENS['alice']}\r\n"
        f"Content-Type: application/json\r\n{framing}\r\n\r\n"
    ).encode()


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the server closed without answering"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    while len(body) < int(headers.get("content-length", "0")):
        body += sock.recv(65536)
    return int(status_line.split()[1]), headers, body


def connect(rig: ApiRig) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", rig.api.server.port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def test_a_declared_20_mb_body_with_a_valid_token_is_refused_before_a_byte_is_sent(
    shared: ApiRig,
) -> None:
    with connect(shared) as sock:
        sock.sendall(request_head(shared, f"Content-Length: {TWENTY_MB}"))
        status, headers, body = read_answer(sock)  # the body was never sent
    assert status == 413
    assert headers["connection"] == "close"
    assert str(CAP) in json.loads(body)["detail"]


def test_a_streamed_body_is_refused_once_past_the_cap_while_the_client_still_sends(
    shared: ApiRig,
) -> None:
    chunk = b"x" * 8192
    with connect(shared) as sock:
        sock.sendall(request_head(shared, "Transfer-Encoding: chunked"))
        for _ in range(CAP // len(chunk) + 1):  # one chunk past the cap, and no last chunk
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        status, headers, _body = read_answer(sock)  # answered though the body never ended
    assert status == 413
    assert headers["connection"] == "close"


def test_a_body_within_the_cap_is_served(shared: ApiRig) -> None:
    body = {"duration": "1h", "reason": "r" * 200}
    response = shared.http.put(EXEMPTION, json=body, headers=shared.as_user("alice"))
    assert response.status_code == 200


def test_the_app_behind_the_cap_never_receives_more_than_the_cap_of_a_20_mb_body() -> None:
    received: list[int] = []
    sent: list[Message] = []

    async def greedy_app(_scope: Scope, receive: Receive, _send: Send) -> None:
        while True:
            message = await receive()
            received.append(len(message.get("body", b"")))
            if not message.get("more_body"):
                return

    chunks = iter([b"x" * 65536] * (TWENTY_MB // 65536))

    async def receive() -> Message:
        body = next(chunks)
        return {"type": "http.request", "body": body, "more_body": True}

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {"type": "http", "method": "PUT", "path": "/", "headers": []}
    asyncio.run(BodyLimitMiddleware(greedy_app, max_bytes=CAP)(scope, receive, send))
    assert sum(received) <= CAP
    assert sent[0]["status"] == 413
    assert len(list(chunks)) == TWENTY_MB // 65536 - 2  # two chunks taken, the rest untouched


def accepted_sockets(server: ApiServer) -> list[socket.socket]:
    """The sockets of the connections uvicorn holds open now."""
    connections = list(server._server.server_state.connections)
    return [c.transport.get_extra_info("socket") for c in connections if c.transport]


def test_every_accepted_connection_has_tcp_nodelay_set(shared: ApiRig) -> None:
    for _ in range(2):  # keep-alive: the same connection twice
        assert shared.http.get("/healthz").status_code == 200
    sockets = accepted_sockets(shared.api.server)
    assert sockets
    assert all(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in sockets)


def test_headers_over_the_limit_are_refused_while_they_still_arrive(shared: ApiRig) -> None:
    with connect(shared) as sock:  # the header block never ends: answered once past the limit
        sock.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Padding: "
            + b"x" * (shared.settings.max_header_bytes + 1)
        )
        status, _headers, _body = read_answer(sock)
    assert status == 400  # uvicorn answers every h11 protocol error with 400
