"""Who may make the loop's writes: asked before each one, so a leader that lost its Lease
stops at once. A single replica (leader election off, the demo, unit tests) always leads."""

from __future__ import annotations

from collections.abc import Callable

IsLeader = Callable[[], bool]


def always_leading() -> bool:
    return True
