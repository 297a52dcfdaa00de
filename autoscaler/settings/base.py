"""The pieces every settings section shares: the section base and the duration type.

A module of its own so that the sections (`settings/api.py`, `keda.py`, `guards.py`, `ha.py`)
and the tree that mounts them (`settings/tree.py`) import it without a cycle.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Final

from pydantic import BaseModel, BeforeValidator, ConfigDict, JsonValue, PlainSerializer
from pydantic.alias_generators import to_camel

from autoscaler.domain.durations import format_duration, parse_duration

__all__ = ["POSITIVE", "Duration", "Section", "format_duration", "parse_duration"]

Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]

# A field's `json_schema_extra` holds what the chart's schema (settings/reference) states beyond
# the field's own type and bounds: a check the service makes across keys (a span its section
# keeps above zero, as here) or one only a helm value needs (names that are DNS names).
POSITIVE: Final[dict[str, JsonValue]] = {"exclusiveMinimum": 0}


class Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True
    )
