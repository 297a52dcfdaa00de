"""A watch's streamed body: one JSON event per line, an ERROR event mapped to our errors."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

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
