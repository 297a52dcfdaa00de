"""How many queries one fleet read sends (ISSUE 18), for the tests that pin it: it depends on
the signals and the usage views, never on the number of GPUs."""

from __future__ import annotations

SIGNALS = 2  # the default utilization signals


def utilization_queries(views: int, *, per_slot: bool, signals: int = SIGNALS) -> int:
    """The recorded slots' query (no recordings in these histories: the raw read follows),
    then per signal: the NaN check, PEAK, HELD and LAST per view, BUSY and NEWEST, and the
    narrowed per-slot query when some GPUs' summaries are not exact (holes in every series,
    NaN slots)."""
    return 1 + signals * (1 + 3 * views + 2 + (1 if per_slot else 0))
