"""HTTP/1.1 over a raw socket, for the tests that send what no client library would."""

from __future__ import annotations

import socket
import time

from tests.api.rig import ApiRig

Answer = tuple[int, dict[str, str], bytes]


def connect(rig: ApiRig, *, send_buffer: int | None = None) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if send_buffer is not None:  # before connecting, so the window is sized by it
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", rig.api.server.port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_answer(sock: socket.socket, *, to_head: bool = False) -> Answer:
    """The next answer; `to_head`: an answer to HEAD, whose Content-Length no body follows."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the server closed without answering"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    while not to_head and len(body) < int(headers.get("content-length", "0")):
        body += sock.recv(65536)
    return int(status_line.split()[1]), headers, body


def closed_within(sock: socket.socket, seconds: float) -> float | None:
    """Seconds until the server closed the connection (end of stream or reset), reading and
    dropping anything before; None when it is still open after `seconds`."""
    start = time.monotonic()
    deadline = start + seconds
    try:
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            if not sock.recv(65536):
                return time.monotonic() - start
    except TimeoutError:
        return None
    except ConnectionResetError:
        return time.monotonic() - start
    return None


def still_open(sock: socket.socket) -> bool:
    """Whether the server keeps the connection (nothing to read, not closed) right now."""
    return closed_within(sock, 0.05) is None
