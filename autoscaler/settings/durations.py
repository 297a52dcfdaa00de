"""Durations as Kubernetes and KEDA users write them: `90s`, `15m`, `1h30m`, `2d`.

Go's `time.ParseDuration` spelling (a sequence of numbers, each with a unit: `ns`, `us`,
`µs`, `ms`, `s`, `m`, `h`) plus `d` for days, which settings have always taken. A bare
number is seconds. A sign is read only to refuse it with a message that says so: every
duration here is a length of time, never negative.
"""

from __future__ import annotations

import re
from datetime import timedelta

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


def format_duration(span: timedelta) -> str:
    """One unit when exact (3600 s → `1h`, 5400 s → `90m`, 45 s → `45s`), else Go's compound
    spelling without zero parts (90 s → `1m30s`, 93784 s → `1d2h3m4s`)."""
    seconds = span.total_seconds()
    sign, seconds = ("-", -seconds) if seconds < 0 else ("", seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{sign}{int(seconds // size)}{unit}"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        whole, seconds = divmod(seconds, size)
        if whole:
            parts.append(f"{int(whole)}{unit}")
    if seconds or not parts:
        parts.append(f"{seconds:.6f}".rstrip("0").rstrip(".") + "s")
    return sign + "".join(parts)


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
