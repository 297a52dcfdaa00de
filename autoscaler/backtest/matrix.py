"""What a range query answers: a matrix of series, from Prometheus or a recorded history.

Protocols, so the Prometheus adapter's `RangeReply` and the simulated history's reply both
fit without either importing the backtest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol


class Series(Protocol):
    """One series of a matrix result."""

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def values(self) -> Sequence[Sequence[Any]]:
        """`[unix time, value]` pairs; the value as Prometheus' string or as a number."""
        ...


class RangeAnswer(Protocol):
    @property
    def series(self) -> Sequence[Series]: ...

    @property
    def warnings(self) -> Sequence[str]:
        """Partial data: the answer may leave series out."""
        ...
