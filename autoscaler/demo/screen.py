"""The interactive demo's screen: a fixed header, and under it a region redrawn every cycle.

The screen is cleared once, when the header is drawn (and again when the terminal's size
changes, since everything is fitted to the width anew). Every redraw then moves the cursor to
the first row under the header and clears to the end of the screen (ANSI CUP and ED). The
region is fitted to the rows and columns left under the header, words whole
(`autoscaler.demo.layout`): writing it never scrolls the header away.

Region, top to bottom: the simulated time, the quota and the table; then the latest
happenings, as many as the rows left hold (the oldest of them perhaps only its first words,
marked "…", so that no row is left empty while a happening is hidden).

When the story ends the live view is left: the summary is written under the table (or, when
both would not fit, in the table's place) as ordinary text, followed by what comes after it
(the commands to try the API, whether the demo serves on). Taller than the terminal, it
scrolls as any output does, so the terminal's scrollback keeps it and what comes last is on
screen. Nothing is redrawn after that.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TextIO

from autoscaler.demo.header import Header
from autoscaler.demo.layout import rows_taken, stamped, stamped_head, wrap_all
from autoscaler.demo.story import Cycle, World
from autoscaler.demo.view import Row, concluding, happenings, quota_line, rows, stamp_of, table
from autoscaler.domain.models import State, WorkloadRef

CLEAR_SCREEN = "\x1b[2J\x1b[H"
CLEAR_TO_END = "\x1b[J"
FALLBACK_SIZE = os.terminal_size((120, 40))
KEPT = 200  # happenings kept: more than any screen holds

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


def usable_width(size: os.terminal_size) -> int:
    """Columns written: the last one is left free, so no terminal wraps a full row early."""
    return max(1, size.columns - 1)


class LiveTable:
    """A `View` for a terminal: the header stays, the table under it is redrawn in place."""

    def __init__(self, out: TextIO, *, size: TerminalSize | None = None) -> None:
        self._out = out
        self._size = size or (lambda: terminal_size(out))
        self._header: Header | None = None
        self._drawn_for: os.terminal_size | None = None
        self._header_rows = 0
        self._states: dict[WorkloadRef, State] = {}
        self._held: set[WorkloadRef] = set()
        self._recent: list[tuple[str, str]] = []  # (stamp, happening)
        self._top: list[str] = []  # the status line and the quota
        self._rows: list[Row] = []
        self._ended = False

    def start(self, header: Header) -> None:
        self._header = header
        self._draw()

    def show(self, world: World, cycle: Cycle) -> None:
        if self._ended:  # the summary is on screen: serving on leaves it there
            return
        stamp = stamp_of(cycle)
        self._recent += [
            (stamp, line) for line in happenings(world, cycle, self._states, self._held)
        ]
        self._recent = self._recent[-KEPT:]
        speed = world.clock.speed
        pace = "max speed" if speed is None else f"{speed:g}x"
        status = f"{stamp} simulated, {pace}"
        if self._header is not None and not self._header.shows_title(usable_width(self._size())):
            status += f": {world.scenario.title}"  # the header had no room for it
        self._top = [status, quota_line(world)]
        self._rows = rows(world, cycle)
        self._draw()

    def conclude(self, summary: Sequence[str], *, then: Sequence[str] = ()) -> None:
        """Leave the live view: the summary, then `then`, words whole (a `Verbatim` command
        to paste is left for the terminal to wrap), scrolling when taller than the screen."""
        self._ended = True
        size = self._size()
        self._draw_header(size)
        width = usable_width(size)
        room = size.lines - self._header_rows - 1
        text = wrap_all(concluding(summary, then=then), width)
        taken = sum(rows_taken(line, size.columns) for line in text)
        table_block = self._table_block(width)
        fits = table_block and len(table_block) + 1 + taken <= room
        shown = [*table_block, ""] if fits else []
        self._out.write(
            move_to_row(self._header_rows + 1)
            + CLEAR_TO_END
            + "".join(line + "\n" for line in [*shown, *text])
        )
        self._out.flush()

    def _draw(self) -> None:
        size = self._size()
        self._draw_header(size)
        region = self._region(size)
        self._out.write(
            move_to_row(self._header_rows + 1)
            + CLEAR_TO_END
            + "".join(line + "\n" for line in region)
        )
        self._out.flush()

    def _draw_header(self, size: os.terminal_size) -> None:
        if size == self._drawn_for or self._header is None:
            return
        lines = [*self._header.lines(usable_width(size)), ""]
        self._out.write(CLEAR_SCREEN + "".join(line + "\n" for line in lines))
        self._header_rows = len(lines)
        self._drawn_for = size

    def _table_block(self, width: int) -> list[str]:
        if not self._top:
            return []
        return [*wrap_all(self._top, width), "", *table(self._rows, width=width)]

    def _region(self, size: os.terminal_size) -> list[str]:
        """What fits under the header, leaving the last row free so nothing scrolls."""
        width = usable_width(size)
        room = max(0, size.lines - self._header_rows - 1)
        kept = self._table_block(width)[:room]
        recent = self._latest(width, rows=room - len(kept) - 1)
        return [*kept, "", *recent] if recent else kept

    def _latest(self, width: int, *, rows: int) -> list[str]:
        """The latest happenings that fit in `rows`, oldest first, each whole but the oldest
        shown, which may show only its first words: rows are never left empty while a
        happening is hidden."""
        shown: list[str] = []
        for stamp, text in reversed(self._recent):
            lines = stamped(stamp, text, width)
            left = rows - len(shown)
            if len(lines) > left:
                return stamped_head(stamp, text, width, rows=left) + shown
            shown = lines + shown
        return shown
