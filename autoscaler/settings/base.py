"""The pieces every settings section shares: the section base and the duration type.

A module of its own so that the sections (`settings/api.py`, `keda.py`, `guards.py`, `ha.py`)
and the tree that mounts them (`settings/tree.py`) import it without a cycle.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer
from pydantic.alias_generators import to_camel

from autoscaler.domain.durations import format_duration, parse_duration

Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]


class Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )
