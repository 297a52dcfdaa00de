"""Fitting the live view's text to the terminal's width without cutting a word.

A line longer than the width is wrapped at word boundaries, its continuation rows indented
under its text; a table too wide drops its least needed columns (QUEUE, then NAMESPACE, then
KIND) and wraps the cells that are still too long inside their column, so a STATE such as
"deactivated" is never cut. Only a word longer than a whole row is broken, as the terminal
itself would.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

GAP = "  "  # between table columns
STATE_MIN = 22  # the STATE column is never narrower: "idle for 45 min, stop" still reads
DROPPED_FIRST = ("QUEUE", "NAMESPACE", "KIND")  # the quota line names the queues


class Verbatim(str):
    """A line to paste (a command, a URL): printed whole, however long; the terminal wraps
    it, and copying it back gives the line as printed."""

    __slots__ = ()


def rows_taken(line: str, columns: int) -> int:
    """Terminal rows a line takes when the terminal wraps it itself."""
    return max(1, math.ceil(len(line) / max(1, columns)))


def wrap(line: str, width: int, *, indent: int | None = None) -> list[str]:
    """`line` in rows of at most `width` characters, broken between words; the continuation
    rows indented by `indent` (default: the line's own indent plus four). A `Verbatim`
    line is left whole."""
    if len(line) <= width or isinstance(line, Verbatim):
        return [line]
    lead = len(line) - len(line.lstrip(" "))
    hang = " " * min(lead + 4 if indent is None else indent, width // 2)
    return textwrap.wrap(
        line,
        width=max(1, width),
        subsequent_indent=hang,
        break_on_hyphens=False,  # names such as first-raycluster stay whole
        drop_whitespace=True,
    ) or [""]


def wrap_all(lines: Sequence[str], width: int) -> list[str]:
    return [row for line in lines for row in wrap(line, width)]


def stamped(stamp: str, text: str, width: int) -> list[str]:
    """A happening under its time stamp, its continuation rows under its text."""
    return wrap(f"{stamp} {text}", width, indent=len(stamp) + 1)


def stamped_head(stamp: str, text: str, width: int, *, rows: int) -> list[str]:
    """As many of a happening's first words as `rows` hold, marked as continuing ("…"): for
    the one happening the screen has no room left to show whole."""
    words = text.split()
    for count in range(len(words) - 1, 0, -1):
        head = stamped(stamp, " ".join([*words[:count], "…"]), width)
        if len(head) <= rows:
            return head
    return []


def fit_table(heads: Sequence[str], cells: Sequence[Sequence[str]], width: int) -> list[str]:
    """The table in at most `width` columns: columns dropped in `DROPPED_FIRST` order until
    the rest leave the last one `STATE_MIN` (whatever its cells hold now, so the columns do
    not come and go as the states change), then each cell wrapped inside its column."""
    kept = list(range(len(heads)))
    for name in DROPPED_FIRST:
        if _natural_width(heads, cells, kept) <= width:
            break
        if name in heads and len(kept) > 2:
            kept.remove(list(heads).index(name))
    widths = _column_widths(heads, cells, kept)
    room = width - len(GAP) * (len(kept) - 1)
    last = max(STATE_MIN, room - sum(widths[:-1]))
    widths[-1] = min(widths[-1], last)
    while sum(widths) > room and max(widths[:-1]) > STATE_MIN:  # narrow the widest other one
        widest = widths.index(max(widths[:-1]))
        widths[widest] -= 1
    lines = []
    for row in [heads, *cells]:
        lines += _table_row([row[i] for i in kept], widths)
    return lines


def _natural_width(heads: Sequence[str], cells: Sequence[Sequence[str]], kept: list[int]) -> int:
    """The kept columns' width with no cell wrapped, the last one (STATE) at `STATE_MIN`."""
    widths = _column_widths(heads, cells, kept[:-1])
    return sum(widths) + STATE_MIN + len(GAP) * (len(kept) - 1)


def _column_widths(
    heads: Sequence[str], cells: Sequence[Sequence[str]], columns: Sequence[int]
) -> list[int]:
    """Each of `columns` as wide as its widest cell, its heading included."""
    return [max(len(row[i]) for row in [heads, *cells]) for i in columns]


def _table_row(row: Sequence[str], widths: Sequence[int]) -> list[str]:
    """One table row, over as many terminal rows as its longest cell needs."""
    wrapped = [
        textwrap.wrap(c, w, break_on_hyphens=False) or [""]
        for c, w in zip(row, widths, strict=True)
    ]
    height = max(len(cell) for cell in wrapped)
    return [
        GAP.join(
            (cell[n] if n < len(cell) else "").ljust(w)
            for cell, w in zip(wrapped, widths, strict=True)
        ).rstrip()
        for n in range(height)
    ]
