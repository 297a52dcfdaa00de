"""The latest immutable snapshot, swapped atomically, with change notifications.

REST and gRPC read `latest()`; streams subscribe and are woken after each publish.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from autoscaler.domain.models import Snapshot

Listener = Callable[[Snapshot], None]


class SnapshotStore:
    def __init__(self) -> None:
        self._latest: Snapshot | None = None
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def latest(self) -> Snapshot | None:
        return self._latest  # a single reference read: atomic, never a half-built value

    def publish(self, snapshot: Snapshot) -> None:
        with self._lock:
            self._latest = snapshot
            listeners = list(self._listeners)
        for listener in listeners:
            listener(snapshot)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` after every publish; returns the function that unsubscribes."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe
