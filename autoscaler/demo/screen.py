"""The interactive demo's screen: a fixed header, and under it a region redrawn every cycle.

The screen is cleared once, when the header is drawn (and again when the terminal's size
changes, since its lines wrap anew). Every redraw then moves the cursor to the first row under
the header and clears to the end of the screen (ANSI CUP and ED), so the REST URL, the gRPC
address and the token stay in view for the whole demo. The region is clipped to the rows and
columns left under the header: writing it never scrolls the header away.

Region, top to bottom: the simulated time, the quota and the table; the summary once the story
has ended; the latest happenings, as many as fit.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import TextIO

from autoscaler.demo.story import Cycle, World
from autoscaler.demo.view import happenings, quota_line, rows, stamp_of, table
from autoscaler.domain.models import State, WorkloadRef

CLEAR_SCREEN = "\x1b[2J\x1b[H"
CLEAR_TO_END = "\x1b[J"
FALLBACK_SIZE = os.terminal_size((120, 40))
RECENT = 10  # happenings kept for under the table

TerminalSize = Callable[[], os.terminal_size]


def move_to_row(row: int) -> str:
    """ANSI cursor position: column 1 of `row` (1-based)."""
    return f"\x1b[{row};1H"


def terminal_size(out: TextIO) -> os.terminal_size:
    """The size of the terminal `out` writes to; 120 x 40 when it cannot be asked."""
    try:
        return os.get_terminal_size(out.fileno())
    except (OSError, ValueError):  # not a file, or not a terminal (io.UnsupportedOperation)
        return FALLBACK_SIZE


def rows_taken(line: str, columns: int) -> int:
    """Terminal rows a header line wraps to."""
    return max(1, math.ceil(len(line) / max(1, columns)))


class LiveTable:
    """A `View` for a terminal: the header stays, the table under it is redrawn in place."""

    def __init__(self, out: TextIO, *, size: TerminalSize | None = None) -> None:
        self._out = out
        self._size = size or (lambda: terminal_size(out))
        self._header: list[str] = []
        self._drawn_for: os.terminal_size | None = None
        self._header_rows = 0
        self._states: dict[WorkloadRef, State] = {}
        self._held: set[WorkloadRef] = set()
        self._recent: list[str] = []
        self._table: list[str] = []
        self._concluded: list[str] = []

    def start(self, header: Sequence[str]) -> None:
        self._header = list(header)
        self._draw()

    def show(self, world: World, cycle: Cycle) -> None:
        stamp = stamp_of(cycle)
        self._recent += [
            f"{stamp} {line}" for line in happenings(world, cycle, self._states, self._held)
        ]
        self._recent = self._recent[-RECENT:]
        speed = world.clock.speed
        pace = "max speed" if speed is None else f"{speed:g}x"
        status = f"{world.scenario.title}: {stamp} ({pace})"
        self._table = [status, quota_line(world), "", *table(rows(world, cycle))]
        self._draw()

    def conclude(self, lines: Sequence[str]) -> None:
        self._concluded = ["", *lines]
        self._draw()

    def _draw(self) -> None:
        size = self._size()
        if size != self._drawn_for:
            self._out.write(CLEAR_SCREEN + "".join(line + "\n" for line in self._header))
            self._header_rows = sum(rows_taken(line, size.columns) for line in self._header)
            self._drawn_for = size
        region = self._region(size)
        self._out.write(
            move_to_row(self._header_rows + 1)
            + CLEAR_TO_END
            + "".join(line + "\n" for line in region)
        )
        self._out.flush()

    def _region(self, size: os.terminal_size) -> list[str]:
        """What fits under the header, leaving the last row free so nothing scrolls."""
        room = size.lines - self._header_rows - 1
        kept = [*self._table, *self._concluded]
        left_for_recent = room - len(kept) - 1
        if self._recent and left_for_recent > 0:
            kept += ["", *self._recent[-left_for_recent:]]
        return [line[: size.columns - 1] for line in kept[: max(0, room)]]
