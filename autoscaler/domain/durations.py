"""Durations as Kubernetes and KEDA users write them: `90s`, `15m`, `1h30m`, `2d`, read and
written the same way by the settings, the API, the command line, the reasons and the reports.

Go's `time.ParseDuration` spelling (a sequence of numbers, each with a unit: `ns`, `us`,
`µs`, `ms`, `s`, `m`, `h`) plus `d` for days, which settings have always taken. A bare
number is seconds. A sign is read only to refuse it with a message that says so: every
duration here is a length of time, never negative. Each surface turns the parser's
ValueError into its own refusal (a settings error, a 422, a usage error); the syntax is one.

Every duration is at most LONGEST (a century): far beyond any span the service keeps, and far
enough from the calendar's ends that `now + duration` and `now - duration` are always dates.
The API's request bodies take the one spelling `format_duration` writes, bounded, and state it
as a pattern (`spelling_pattern`), so its schema says exactly what it takes.

PromQL's durations (`adapters/prometheus/promql.py`) are another syntax and stay there.
"""

from __future__ import annotations

import re
from datetime import timedelta
from functools import cache
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
LONGEST = timedelta(days=36500)  # a century: see the module's docstring


class TooLong(ValueError):
    """A duration past LONGEST (or past what a timedelta holds)."""


def parse_duration(value: object) -> timedelta:
    """`90`, `90s`, `15m`, `1h30m`, `7d` (a bare number is seconds), or a timedelta."""
    if isinstance(value, bool) or not isinstance(value, timedelta | int | float | str):
        raise ValueError(f"expected a duration such as {EXAMPLES}")
    try:
        if isinstance(value, timedelta):
            span = value
        elif isinstance(value, int | float):
            span = _not_negative(timedelta(seconds=value), value)
        else:
            span = _parse_text(value)
    except OverflowError:
        span = None
    if span is None or span > LONGEST:
        raise TooLong(f"{value!r} is too long to be a duration: at most {format_duration(LONGEST)}")
    return span


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


# The spelling pattern: each unit's largest fraction digits (to the microsecond) and, in a
# compound, what a part after the first may be: less than one of the unit before it.
_FRACTION_DIGITS = {"d": 6, "h": 6, "m": 6, "s": 6, "ms": 3}
_PART_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 1e-3}
_BELOW_ONE_ABOVE = {
    "h": "(?:[01]?[0-9]|2[0-3])",
    "m": "[0-5]?[0-9]",
    "s": r"[0-5]?[0-9](?:\.[0-9]{1,6})?",
    "ms": r"[0-9]{1,3}(?:\.[0-9]{1,3})?",
}


@cache
def spelling_pattern(longest: timedelta) -> str:
    """A pattern (JSON Schema's, Python's alike) of exactly the texts that are durations in
    (0, `longest`] as `format_duration` writes them: one part (`90m`, `1.5h`, a bare number
    of seconds), or a compound largest unit first, each later part less than one of the unit
    before it (`1d2h3m4.5s`, `1h30m`). `longest` is a whole number of days."""
    if longest.total_seconds() % 86400 or longest <= timedelta(0):
        raise ValueError("the longest duration of a spelling is a whole number of days")
    limit = round(longest.total_seconds() * 1000)  # in ms, the smallest unit
    singles = [_up_to(limit // 1000, _FRACTION_DIGITS["s"])]  # a bare number is seconds
    singles += [
        _up_to(limit // round(size * 1000), _FRACTION_DIGITS[unit]) + unit
        for unit, size in _PART_UNIT_SECONDS.items()
    ]
    compounds = [
        f"0*{integer_range_pattern(1, limit // round(size * 1000) - 1)}{lead}{_later_parts(lead)}"
        for lead, size in _PART_UNIT_SECONDS.items()
        if lead != "ms" and limit // round(size * 1000) > 1  # `1d` has no `1d…` below it
    ]
    return "^(?:" + "|".join(singles + compounds) + ")$"


def _later_parts(lead: str) -> str:
    """One or more of the units after `lead`, in order."""
    after = list(_PART_UNIT_SECONDS)[list(_PART_UNIT_SECONDS).index(lead) + 1 :]
    options = []
    for first, unit in enumerate(after):
        rest = "".join(f"(?:{_BELOW_ONE_ABOVE[u]}{u})?" for u in after[first + 1 :])
        options.append(f"{_BELOW_ONE_ABOVE[unit]}{unit}{rest}")
    return "(?:" + "|".join(options) + ")"


def _up_to(most: int, fraction_digits: int) -> str:
    """A number in (0, `most`]: leading zeros allowed, at most `fraction_digits` decimals."""
    fraction = rf"(?:\.[0-9]{{1,{fraction_digits}}})?"
    under_one = "|".join(
        rf"0+\.{'0' * zeros}[1-9]" + _up_to_digits(fraction_digits - 1 - zeros)
        for zeros in range(fraction_digits)
    )
    whole = f"0*{integer_range_pattern(1, most - 1)}{fraction}" if most > 1 else None
    exact = rf"0*{most}(?:\.0{{1,{fraction_digits}}})?"
    return "(?:" + "|".join(part for part in (whole, exact, under_one) if part) + ")"


def integer_range_pattern(low: int, high: int) -> str:
    """Decimal integers in [low, high] without leading zeros, as a pattern; low is 0 or 1."""
    if low > high:
        raise ValueError("an empty range of integers")
    top = str(high)
    options = ["0"] if low == 0 else []
    if len(top) > 1:  # every number with fewer digits
        options.append(f"[1-9][0-9]{{0,{len(top) - 2}}}" if len(top) > 2 else "[1-9]")
    for place, digit in enumerate(top):  # same length: below `top` first at `place`
        floor = "1" if place == 0 else "0"
        if int(digit) > int(floor):
            tail = len(top) - place - 1
            options.append(top[:place] + f"[{floor}-{int(digit) - 1}]" + _digits(tail))
    options.append(top)
    return "(?:" + "|".join(options) + ")"


def _digits(count: int) -> str:
    return "" if count == 0 else "[0-9]" if count == 1 else f"[0-9]{{{count}}}"


def _up_to_digits(count: int) -> str:
    return "" if count == 0 else f"[0-9]{{0,{count}}}"
