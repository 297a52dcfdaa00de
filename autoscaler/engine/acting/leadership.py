"""Leadership, one word for it: `leads()` says whether this replica leads now, the only one
that makes the loop's writes. Asked before each write, so a leader that lost its Lease stops
at once. A single replica (leader election off, the demo, unit tests) always leads."""

from __future__ import annotations

from collections.abc import Callable

Leads = Callable[[], bool]


def always_leads() -> bool:
    return True
