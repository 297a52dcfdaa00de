"""The pieces every settings section shares: the section base and the duration type.

A module of its own so that sections defined beside their feature (`keda/settings.py`,
`api/settings.py`) and the tree that mounts them (`config.py`) import it without a cycle.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer
from pydantic.alias_generators import to_camel

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def parse_duration(value: object) -> timedelta:
    """`90`, `90s`, `15m`, `1h`, `7d` (a bare number is seconds), or a timedelta."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("expected a duration such as 90s, 15m, 1h")
    match = _DURATION.match(str(value))
    if match is None:
        raise ValueError(f"{value!r} is not a duration such as 90s, 15m, 1h")
    return timedelta(seconds=float(match.group(1)) * _UNIT_SECONDS[match.group(2)])


def format_duration(span: timedelta) -> str:
    """The shortest exact spelling: 3600 s → `1h`, 90 s → `90s`."""
    seconds = span.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]


class Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )
