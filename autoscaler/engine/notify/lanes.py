"""One target's queue of notifications: bounded, closable, drained by its one worker."""

from __future__ import annotations

import threading
from collections import deque

from autoscaler.domain.notices.notifications import Notification


class Lane:
    def __init__(self, name: str, *, limit: int) -> None:
        self.name = name
        self._limit = limit
        self._items: deque[Notification] = deque()
        self._ready = threading.Condition()
        self._closed = False

    def offer(self, notification: Notification) -> bool:
        """Queue it unless the lane is full or closed; never waits."""
        with self._ready:
            if self._closed or len(self._items) >= self._limit:
                return False
            self._items.append(notification)
            self._ready.notify()
            return True

    def take(self) -> Notification | None:
        """The next one, waiting for it; None once closed and empty."""
        with self._ready:
            while not self._items and not self._closed:
                self._ready.wait()
            return self._items.popleft() if self._items else None

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()
