"""Bounded connections over real sockets: a head must arrive whole within the header timeout,
a kept-alive connection lives the idle timeout, and the connection cap closes a connection
that waits on its client before it turns anyone away, so the probes get in."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import timedelta

import pytest
from fastapi import APIRouter

from autoscaler.settings.api import ApiSettings
from tests.api.rig import ApiRig
from tests.api.wire import closed_within, connect, read_answer

HEADER_TIMEOUT = 0.4
IDLE_TIMEOUT = 0.3
CAP = 8
SLACK = 2.0  # a loaded machine's scheduling delay, far below "never"
PROBE = b"GET /readyz HTTP/1.1\r\nHost: test\r\n\r\n"


class Gate:
    """A route that holds each request until the test opens the gate: requests being served."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.arrived = threading.Semaphore(0)
        self.router = APIRouter()
        self.router.add_api_route("/held", self._held, methods=["GET"])

    async def _held(self) -> dict[str, bool]:
        self.arrived.release()
        while not self.opened.is_set():
            await asyncio.sleep(0.01)
        return {"held": True}


@pytest.fixture(scope="module")
def bounded() -> Iterator[ApiRig]:
    """Sub-second timeouts, the default cap."""
    settings = ApiSettings(
        host="127.0.0.1",
        port=0,
        header_timeout=timedelta(seconds=HEADER_TIMEOUT),
        idle_timeout=timedelta(seconds=IDLE_TIMEOUT),
    )
    with ApiRig(settings=settings) as rig:
        rig.cycle()  # ready
        yield rig


@pytest.fixture(scope="module")
def gate() -> Gate:
    return Gate()


@pytest.fixture(scope="module")
def capped(gate: Gate) -> Iterator[ApiRig]:
    """A small cap, the default timeouts (none ends a connection during a test)."""
    settings = ApiSettings(host="127.0.0.1", port=0, reads_open=True, max_connections=CAP)
    with ApiRig(settings=settings, routers=[gate.router]) as rig:
        rig.cycle()  # ready
        yield rig


def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout(
    bounded: ApiRig,
) -> None:
    with connect(bounded) as sock:
        closed_after = closed_within(sock, HEADER_TIMEOUT + SLACK)
    assert closed_after is not None
    assert closed_after >= HEADER_TIMEOUT * 0.9


def test_a_head_trickled_byte_by_byte_is_cut_off_at_the_header_timeout(bounded: ApiRig) -> None:
    head = PROBE[:-2] + b"X-Slow: " + b"y" * 1000  # never ends
    start = time.monotonic()
    cut_off = None
    with connect(bounded) as sock:
        for byte in head:  # each byte would restart uvicorn's own keep-alive timer
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                cut_off = time.monotonic() - start
                break
            if time.monotonic() - start > HEADER_TIMEOUT + SLACK:
                break
            time.sleep(HEADER_TIMEOUT / 10)
    assert cut_off is not None, "the trickled head was still being read"
    assert cut_off >= HEADER_TIMEOUT * 0.9


def test_a_kept_alive_connection_serves_again_then_closes_after_the_idle_timeout(
    bounded: ApiRig,
) -> None:
    with connect(bounded) as sock:
        for _ in range(2):  # the same connection twice: kept alive between requests
            sock.sendall(PROBE)
            assert read_answer(sock)[0] == 200
        closed_after = closed_within(sock, IDLE_TIMEOUT + SLACK)
    assert closed_after is not None
    assert closed_after >= IDLE_TIMEOUT * 0.9


def test_the_next_head_on_a_kept_alive_connection_has_the_header_timeout_too(
    bounded: ApiRig,
) -> None:
    with connect(bounded) as sock:
        sock.sendall(PROBE)
        assert read_answer(sock)[0] == 200
        sock.sendall(b"GET /readyz HTTP/1.1\r\n")  # and the rest never comes
        closed_after = closed_within(sock, HEADER_TIMEOUT + SLACK)
    assert closed_after is not None
    assert closed_after >= HEADER_TIMEOUT * 0.9


def test_a_client_holding_every_connection_cannot_keep_the_readiness_probe_out(
    capped: ApiRig,
) -> None:
    with ExitStack() as stack:
        held = [stack.enter_context(connect(capped)) for _ in range(CAP)]
        for sock in held[::2]:  # kept alive after an answer
            sock.sendall(PROBE)
            assert read_answer(sock)[0] == 200
        for sock in held[1::2]:  # half-way through a head
            sock.sendall(b"GET /readyz HTTP/1.1\r\n")
        for _ in range(2):  # each probe closes the oldest of them, the others stay
            probe = stack.enter_context(connect(capped))
            probe.sendall(PROBE)
            assert read_answer(probe)[0] == 200
        assert closed_within(held[0], SLACK) is not None
        assert closed_within(held[1], SLACK) is not None
        assert all(closed_within(sock, 0.05) is None for sock in held[2:])


def test_over_the_cap_with_every_request_being_served_the_newcomer_is_closed_and_no_one_else(
    capped: ApiRig, gate: Gate
) -> None:
    gate.opened.clear()
    with ExitStack() as stack:
        served = [stack.enter_context(connect(capped)) for _ in range(CAP)]
        for sock in served:
            sock.sendall(b"GET /held HTTP/1.1\r\nHost: test\r\n\r\n")
        assert all(gate.arrived.acquire(timeout=SLACK) for _ in served)
        newcomer = stack.enter_context(connect(capped))
        newcomer.sendall(PROBE)
        assert closed_within(newcomer, SLACK) is not None
        gate.opened.set()
        assert [read_answer(sock)[0] for sock in served] == [200] * CAP


def test_the_cap_counts_connections_not_requests_so_a_kept_alive_one_serves_many(
    capped: ApiRig,
) -> None:
    with socket.create_connection(("127.0.0.1", capped.api.server.port), timeout=10) as sock:
        for _ in range(CAP * 2):
            sock.sendall(PROBE)
            assert read_answer(sock)[0] == 200
