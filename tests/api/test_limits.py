"""Bounded requests over real sockets: the body cap acts before the body is read, an answer
given before the body ends closes the connection, the header limit holds however the head
arrives, ambiguous framing and a body on GET are refused, and connections are answered without
Nagle's delay (TCP_NODELAY on every accepted socket)."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from starlette.types import Message, Receive, Scope, Send

from autoscaler.api.limits import RequestLimitMiddleware
from autoscaler.api.server import ApiServer
from tests.api.rig import TOKENS, ApiRig
from tests.api.wire import closed_within, connect, read_answer

EXEMPTION = "/api/v1/workloads/team-a/alice-rc/exemption"
CAP = 64 * 1024
TWENTY_MB = 20 * 1024 * 1024


def request_head(rig: ApiRig, framing: str) -> bytes:
    return (
        f"PUT {EXEMPTION} HTTP/1.1\r\nHost: test\r\n"
        f"Authorization: Bearer {TOKENS['alice']}\r\n"
        f"Content-Type: application/json\r\n{framing}\r\n\r\n"
    ).encode()


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
    limited = RequestLimitMiddleware(greedy_app, max_body_bytes=CAP, max_header_bytes=32768)
    asyncio.run(limited(scope, receive, send))
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


SLACK = 5.0  # seconds: how long a closing connection may take on a loaded machine
ONE_CHUNK = b"2000\r\n" + b"x" * 0x2000 + b"\r\n"


def test_an_answer_given_before_the_body_ends_closes_the_connection(shared: ApiRig) -> None:
    with connect(shared) as sock:
        sock.sendall(
            f"PUT {EXEMPTION} HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
            + ONE_CHUNK  # no token, and the body goes on
        )
        status, headers, _body = read_answer(sock)
        assert (status, headers["connection"]) == (401, "close")
        assert closed_within(sock, SLACK) is not None


def test_an_endless_chunked_body_after_a_401_is_cut_off_within_the_body_cap(rig: ApiRig) -> None:
    # What the client manages to send is what the server read plus what the two kernels
    # buffer; both buffers are pinned small (the server's through its listening socket, which
    # accepted sockets inherit) so that the count says what the server took.
    listener = rig.api.server._socket
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    kernel_buffers = listener.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    sent, cut_off = 0, False
    with connect(rig, send_buffer=8192) as sock:
        kernel_buffers += sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        sock.sendall(
            f"PUT {EXEMPTION} HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        try:
            while sent <= 16 * (CAP + kernel_buffers):  # "endless": many times the bound
                sock.sendall(ONE_CHUNK)
                sent += len(ONE_CHUNK)
        except (BrokenPipeError, ConnectionResetError):
            cut_off = True
    assert cut_off, f"{sent} bytes of body were read and discarded"
    assert sent <= CAP + kernel_buffers


def test_a_body_read_to_its_end_keeps_the_connection_for_the_next_request(shared: ApiRig) -> None:
    body = json.dumps({"duration": "1h", "reason": "kept alive"}).encode()
    with connect(shared) as sock:
        for _ in range(2):
            sock.sendall(request_head(shared, f"Content-Length: {len(body)}") + body)
            status, headers, _answer = read_answer(sock)
            assert status == 200
            assert "connection" not in headers


def head_of(size: int) -> bytes:
    """A GET /healthz head of exactly `size` bytes, padded with one header."""
    start, end = b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Padding: ", b"\r\n\r\n"
    return start + b"x" * (size - len(start) - len(end)) + end


def test_headers_over_the_limit_sent_in_one_write_are_answered_431_and_closed(
    shared: ApiRig,
) -> None:
    limit = shared.settings.max_header_bytes
    with connect(shared) as sock:
        sock.sendall(head_of(limit))  # at the limit: served, and kept
        assert read_answer(sock)[0] == 200
        sock.sendall(head_of(limit + 1))
        status, headers, _body = read_answer(sock)
        assert (status, headers["connection"]) == (431, "close")
        assert closed_within(sock, SLACK) is not None
    with connect(shared) as sock:  # 100 KB, as a probe sent it, in one write
        sock.sendall(head_of(100_000))
        assert read_answer(sock)[0] == 431


@pytest.mark.parametrize(
    ("method", "framing", "status"),
    [
        ("GET", b"Content-Length: 5\r\n\r\nhello", 400),
        ("GET", b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", 400),
        # No path here takes HEAD: the method is judged first (405), and closes the same way.
        ("HEAD", b"Content-Length: 5\r\n\r\nhello", 405),
    ],
)
def test_a_body_on_get_or_head_is_refused_and_the_connection_closed(
    shared: ApiRig, method: str, framing: bytes, status: int
) -> None:
    with connect(shared) as sock:
        sock.sendall(f"{method} /healthz HTTP/1.1\r\nHost: test\r\n".encode() + framing)
        answer, headers, _body = read_answer(sock, to_head=method == "HEAD")
        assert (answer, headers["connection"]) == (status, "close")
        assert closed_within(sock, SLACK) is not None


def test_a_get_with_an_empty_body_declared_is_served(shared: ApiRig) -> None:
    with connect(shared) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n")
        assert read_answer(sock)[0] == 200


@pytest.mark.parametrize(
    "framing",
    [
        pytest.param(
            b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            id="length-and-chunked",
        ),
        pytest.param(b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", id="two-lengths"),
        pytest.param(b"Content-Length: 5, 6\r\n\r\nhello!", id="a-list-of-lengths"),
    ],
)
def test_ambiguous_framing_is_refused_and_the_connection_closed(
    shared: ApiRig, framing: bytes
) -> None:
    with connect(shared) as sock:
        sock.sendall(
            f"PUT {EXEMPTION} HTTP/1.1\r\nHost: test\r\n"
            f"Authorization: Bearer {TOKENS['alice']}\r\n".encode()
            + framing
        )
        status, headers, _body = read_answer(sock)
        assert (status, headers["connection"]) == (400, "close")
        assert closed_within(sock, SLACK) is not None
