"""What callers send: path names, filters and change requests, validated before any work.

Checks that need the clock or the settings (a time in the past, an exemption over the
maximum) are made by the routes, and answered with the same 422 naming the field.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated

from fastapi import Path
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)
from pydantic.alias_generators import to_camel

from autoscaler.domain.durations import parse_duration
from autoscaler.domain.text import LABEL_PATTERN, SUBDOMAIN_PATTERN, unsafe_characters

# `90m`, `4h`, `1h30m` (Go's compounds, as Kubernetes users write them) or bare seconds.
DURATION_PART = r"[0-9]{1,9}(\.[0-9]{1,6})?(ms|s|m|h|d)"
DURATION_PATTERN = rf"^(({DURATION_PART}){{1,5}}|[0-9]{{1,9}}(\.[0-9]{{1,6}})?)$"
RFC3339_PATTERN = (
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}"
    r"(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
MAX_REASON = 256  # characters: a sentence, not a document; it ends up in annotations

NamespaceName = Annotated[
    str,
    Path(
        min_length=1,
        max_length=63,
        pattern=LABEL_PATTERN,
        description="Kubernetes namespace.",
        examples=["team-a"],
    ),
]
WorkloadName = Annotated[
    str,
    Path(
        min_length=1,
        max_length=253,
        pattern=SUBDOMAIN_PATTERN,
        description="The Workload's name, or its owner's (e.g. the RayCluster's) name.",
        examples=["my-workspace-cluster"],
    ),
]


def _not_blank(text: str) -> str:
    """Trimmed after the length check, so the schema's limits hold for what is sent."""
    if not text.strip():
        raise ValueError("must not be blank")
    return text.strip()


def _printable(text: str) -> str:
    """No control or bidi override character: the text ends up on other people's terminals."""
    unsafe = unsafe_characters(text)
    if unsafe:
        raise ValueError(f"must not contain control or bidi characters ({', '.join(unsafe)})")
    return text


Reason = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_REASON),
    AfterValidator(_printable),
    AfterValidator(_not_blank),
    Field(
        description="Why; kept in annotations and the audit log. Printable text: control "
        "characters (C0, DEL, C1) and bidi overrides or isolates are refused.",
        examples=["demo at 3pm"],
    ),
]


def positive_duration(value: object) -> timedelta:
    """`90s`, `4h`, `1h30m`, `2d`: the schema's spelling, longer than zero, representable."""
    if isinstance(value, str) and value.startswith("-"):
        raise ValueError("must be longer than zero")
    if not isinstance(value, str) or re.fullmatch(DURATION_PATTERN, value) is None:
        raise ValueError("is not a duration such as 90m, 4h, 1h30m or 2d")
    try:
        span = parse_duration(value)
    except ValueError:
        raise ValueError("is too long to be a duration") from None
    if span <= timedelta(0):
        raise ValueError("must be longer than zero")
    return span


Duration = Annotated[
    timedelta,
    BeforeValidator(positive_duration),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": DURATION_PATTERN,
            "description": "A length such as `90m`, `4h`, `1h30m` or `2d` "
            "(a bare number is seconds).",
            "examples": ["4h"],
        }
    ),
]


def rfc3339_time(value: object) -> object:
    """Only what the schema promises (RFC 3339 text); pydantic alone also takes numbers."""
    if not isinstance(value, str) or re.fullmatch(RFC3339_PATTERN, value) is None:
        raise ValueError("is not an RFC 3339 time such as 2030-01-01T18:00:00Z")
    return value


Time = Annotated[AwareDatetime, BeforeValidator(rfc3339_time)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class ExemptionRequest(_Request):
    """Exempt a workload for a duration or until a time. Give exactly one of the two."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"duration": "4h", "reason": "presenting the demo"},
                {"until": "2030-01-01T18:00:00Z", "reason": "training over the weekend"},
            ]
        }
    )

    duration: Duration | None = None
    until: Time | None = Field(
        None, description="RFC 3339 time with a timezone; must be in the future."
    )
    reason: Reason

    @model_validator(mode="after")
    def _one_of_duration_or_until(self) -> ExemptionRequest:
        if (self.duration is None) == (self.until is None):
            raise ValueError("give exactly one of `duration` or `until`")
        return self


class ReasonRequest(_Request):
    """A change that only needs to say why."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"reason": "maintenance window"}]})

    reason: Reason


class SnoozeRequest(_Request):
    """Keep a workload running: no stop before now + `duration` (clipped to the rule's
    longest snooze; the answer says when it was)."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"duration": "4h", "reason": "still debugging"}]}
    )

    duration: Duration
    reason: Reason
