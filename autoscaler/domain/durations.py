"""Durations as Kubernetes and KEDA users write them: `90s`, `15m`, `1h30m`, `2d`, read and
written the same way by the settings, the API, the command line, the reasons and the reports.

Go's `time.ParseDuration` spelling (a sequence of numbers, each with a unit: `ns`, `us`,
`µs`, `ms`, `s`, `m`, `h`) plus `d` for days, which settings have always taken. A bare
number is seconds. A sign is read only to refuse it with a message that says so: every
duration here is a length of time, never negative. Each surface turns the parser's
ValueError into its own refusal (a settings error, a 422, a usage error); the syntax is one.

PromQL's durations (`adapters/prometheus/promql.py`) are another syntax and stay there.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Literal

UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1,
    "m": 60,
    "h": 3600,
    "d": 86400,
}
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_PART = re.compile(rf"\s*({_NUMBER})\s*(ns|us|µs|ms|s|m|h|d)")
_BARE = re.compile(rf"\s*({_NUMBER})\s*")
_COMPOUND = re.compile(rf"(?:{_PART.pattern})+\s*")
EXAMPLES = "90s, 15m, 1h30m or 2d"


def parse_duration(value: object) -> timedelta:
    """`90`, `90s`, `15m`, `1h30m`, `7d` (a bare number is seconds), or a timedelta."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"expected a duration such as {EXAMPLES}")
    try:
        if isinstance(value, int | float):
            return _not_negative(timedelta(seconds=value), value)
        return _parse_text(value)
    except OverflowError:
        raise ValueError(f"{value!r} is too long to be a duration") from None


Split = Literal["when-uneven", "never", "always"]
_SIZES = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def format_duration(span: timedelta, *, units: str = "dhms", split: Split = "when-uneven") -> str:
    """`span` in `units` (some of "dhms", largest first); zero is `0` of the smallest unit.

    `split` says when it is written in several parts:
    - "when-uneven" (settings, the API, the surfaces): one unit when the span is a whole
      number of it, the largest such (3600 s → `1h`, 5400 s → `90m`), else Go's compound
      spelling without zero parts (90 s → `1m30s`, 93784 s → `1d2h3m4s`, 0.25 s → `0.25s`);
      `parse_duration` reads back every one.
    - "never" (the reasons): one unit, the largest the span is a whole number of, in whole
      smallest units (90.5 s → `90s`; with units "ms", 3600 s → `60m`).
    - "always" (a warning's lead): every part, in whole smallest units (5400 s → `1h30m`)."""
    sizes = [(unit, _SIZES[unit]) for unit in units]
    seconds = span.total_seconds()
    sign, seconds = ("-", -seconds) if seconds < 0 else ("", seconds)
    if split != "when-uneven":  # only the settings' spelling must read back to the microsecond
        smallest = sizes[-1][1]
        seconds = seconds // smallest * smallest
    if split != "always":
        for unit, size in sizes[:-1]:
            if seconds >= size and seconds % size == 0:
                return f"{sign}{int(seconds // size)}{unit}"
    if split == "never":
        return f"{sign}{int(seconds // sizes[-1][1])}{sizes[-1][0]}"
    return sign + _parts(seconds, sizes)


def _parts(seconds: float, sizes: list[tuple[str, int]]) -> str:
    """Each unit's whole part, zero parts left out; the smallest takes the rest, to the
    microsecond, and is written alone when every other part is zero."""
    parts = []
    for unit, size in sizes[:-1]:
        whole, seconds = divmod(seconds, size)
        if whole:
            parts.append(f"{int(whole)}{unit}")
    unit, size = sizes[-1]
    if seconds or not parts:
        parts.append(f"{seconds / size:.6f}".rstrip("0").rstrip(".") + unit)
    return "".join(parts)


def _parse_text(value: str) -> timedelta:
    text = value.strip()
    if text.startswith(("-", "+")):
        span = _unsigned(text[1:], original=value)
        return _not_negative(-span if text[0] == "-" else span, value)
    return _unsigned(text, original=value)


def _unsigned(text: str, *, original: object) -> timedelta:
    bare = _BARE.fullmatch(text)
    if bare is not None:
        return timedelta(seconds=float(bare.group(1)))
    if _COMPOUND.fullmatch(text) is None:
        raise ValueError(f"{original!r} is not a duration such as {EXAMPLES}")
    seconds = sum(float(number) * UNIT_SECONDS[unit] for number, unit in _PART.findall(text))
    return timedelta(seconds=seconds)


def _not_negative(span: timedelta, original: object) -> timedelta:
    if span < timedelta(0):
        raise ValueError(f"{original!r} is negative; a duration is a length such as {EXAMPLES}")
    return span
