"""A watch's streamed body: one JSON event per line, an ERROR event mapped to our errors;
and the interrupt that ends a quiet watch at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from autoscaler.adapters.kubernetes.errors import status_error
from autoscaler.adapters.kubernetes.resources import Obj
from autoscaler.core.errors import ClusterError


@dataclass(frozen=True)
class WatchEvent:
    type: str  # ADDED, MODIFIED, DELETED
    object: Obj


def lines(chunks: Iterator[bytes]) -> Iterator[str]:
    """Whole non-empty lines of a streamed body; a watch sends one JSON event per line."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from (line.decode() for line in complete if line.strip())
    if pending.strip():
        yield pending.decode()


def watch_event(event: Obj, what: str) -> tuple[str, Obj]:
    kind, obj = str(event.get("type", "")), event.get("object")
    if not isinstance(obj, dict):
        raise ClusterError(f"{what}: malformed watch event")
    if kind == "ERROR":
        code = int(obj.get("code") or 500)
        raise status_error(code, what=what, message=str(obj.get("message", "")), retry_after=None)
    return kind, obj


class WatchInterrupt:
    """Ends a watch from another thread at once.

    A quiet watch sits in its socket read until the server ends the stream (`watchTimeout`,
    minutes by default); joining it on shutdown would hold the process past Kubernetes'
    termination grace. Firing shuts the open stream's socket for reading, so its read sees
    the end of the stream; a stream opened after the fire is shut as it is attached.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fired = False
        self._streams: set[Any] = set()  # urllib3 responses being read

    @property
    def fired(self) -> bool:
        with self._lock:
            return self._fired

    def fire(self) -> None:
        with self._lock:
            self._fired = True
            streams = list(self._streams)
        for stream in streams:
            _shut(stream)

    @contextmanager
    def reading(self, stream: Any) -> Iterator[None]:
        """While `stream` is read, a fire ends it."""
        with self._lock:
            self._streams.add(stream)
            fired = self._fired
        if fired:
            _shut(stream)
        try:
            yield
        finally:
            with self._lock:
                self._streams.discard(stream)


def _shut(stream: Any) -> None:
    # Released or already closed: its read is over anyway.
    with suppress(ValueError, RuntimeError, OSError):
        stream.shutdown()
