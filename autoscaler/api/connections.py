"""Bounded connections: uvicorn's h11 protocol with a head timeout, an idle timeout and a cap.

uvicorn bounds none of these as we need (uvicorn/protocols/http/h11_impl.py, 0.54):
- its keep-alive timer runs only after an answer and is cancelled by any byte, so a fresh
  connection that sends nothing, or a head sent a byte every few seconds, is held for ever.
  Here a head must be whole within `header_timeout` of the connection's opening (on a
  kept-alive connection, of the next request's first byte), as Go's ReadHeaderTimeout.
- its keep-alive timeout is a whole number of seconds; here it is `idle_timeout`.
- its `limit_concurrency` accepts every connection and answers 503 to every request while
  as many connections are open, idle ones included: one client holding that many idle
  connections would fail the kubelet's probes for as long as it likes. Here one connection
  more than `max_connections` closes the oldest connection that waits on its client (a head,
  a body, or reading an answer), never one whose request is being served: a newcomer, the
  probe included, is turned away only while every connection has a request in the service's
  hands, which ends as each answer is written.

A timed-out or evicted connection is aborted (no answer, nothing flushed): a client that does
not send its request or read its answer gets no further bytes either.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int
    header_timeout_s: float
    idle_timeout_s: float


class BoundedH11Protocol(H11Protocol):
    """One connection; `protocol_class` binds the limits to a subclass uvicorn can build."""

    limits: ClassVar[ConnectionLimits]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        self.opened_at = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        super().connection_made(transport)
        self.opened_at = self.loop.time()
        self._arm_head_timer()
        self._keep_within_cap()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:  # part of a head: its clock runs from now
            if self._head_timer is None:
                self._arm_head_timer()
        else:
            self._cancel_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.timeout_keep_alive_task is not None:  # uvicorn's idle timer, our length
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = self.loop.call_later(
                self.limits.idle_timeout_s, self.timeout_keep_alive_handler
            )

    def waits_on_client(self) -> bool:
        """Nothing of ours is being worked on: the connection waits for a request, for the
        rest of a body, or for its client to read an answer."""
        return (
            self.cycle is None
            or self.cycle.response_complete
            or self.conn.their_state is h11.SEND_BODY
            or self.flow.write_paused
        )

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.limits.header_timeout_s, self._head_late)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE:
            self.transport.abort()

    def _keep_within_cap(self) -> None:
        open_now = [
            c
            for c in self.connections
            if isinstance(c, BoundedH11Protocol) and not c.transport.is_closing()
        ]
        if len(open_now) <= self.limits.max_connections:
            return
        waiting = [c for c in open_now if c.waits_on_client()]  # this one at least
        min(waiting, key=lambda c: c.opened_at).transport.abort()


def protocol_class(limits: ConnectionLimits) -> type[BoundedH11Protocol]:
    """The protocol uvicorn builds for each connection, with `limits` bound."""

    class Bounded(BoundedH11Protocol):
        pass

    Bounded.limits = limits
    return Bounded
