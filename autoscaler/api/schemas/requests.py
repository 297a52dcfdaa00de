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

from autoscaler.domain.durations import (
    LONGEST,
    TooLong,
    format_duration,
    parse_duration,
    spelling_pattern,
)
from autoscaler.domain.text import (
    LABEL_PATTERN,
    SUBDOMAIN_PATTERN,
    UNSAFE_CHARACTERS,
    unsafe_characters,
)

MAX_DURATION_TEXT = 32  # characters: `36499d23h59m59.999999s` is 22
DURATION_EXAMPLES = "90m, 4h, 1h30m or 2d"
# Years 2 to 9998: a time in year 1 or 9999 may not be a date in UTC (`0001-01-01T00:00+01:00`).
YEARS = (
    r"(?:000[2-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]"
    r"|999[0-8])"
)
RFC3339_PATTERN = (
    rf"^{YEARS}-[0-9]{{2}}-[0-9]{{2}}[Tt][0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}"
    r"(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
MAX_REASON = 256  # characters: a sentence, not a document; it ends up in annotations
# What `str.strip` takes away (str.isspace), less the control characters refused anyway.
SPACES = r" \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# A reason as the schema states it: no unsafe character, and something besides spaces.
REASON_PATTERN = f"^[^{UNSAFE_CHARACTERS}]*[^{UNSAFE_CHARACTERS}{SPACES}][^{UNSAFE_CHARACTERS}]*$"

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
    """No character the CLI would escape (control, line separator, bidi, zero-width, tag): the
    text ends up on other people's terminals."""
    unsafe = unsafe_characters(text)
    if unsafe:
        listed = ", ".join(unsafe)
        raise ValueError(
            f"must not contain control or bidi characters, nor invisible ones ({listed})"
        )
    return text


Reason = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_REASON),
    AfterValidator(_printable),
    AfterValidator(_not_blank),
    Field(
        description="Why; kept in annotations and the audit log. Printable text: control "
        "characters (C0, DEL, C1) and bidi overrides or isolates are refused, and so is a "
        "reason of spaces only.",
        examples=["demo at 3pm"],
        json_schema_extra={"pattern": REASON_PATTERN},  # checked by the validators below
    ),
]


def positive_duration(value: object, *, longest: timedelta = LONGEST) -> timedelta:
    """`90s`, `4h`, `1h30m`, `2d`: the schema's spelling (`spelling_pattern`), longer than
    zero and at most `longest`; a refusal says which of these it missed."""
    if not isinstance(value, str):
        raise ValueError(f"is not a duration such as {DURATION_EXAMPLES}")
    if len(value) <= MAX_DURATION_TEXT and re.fullmatch(spelling_pattern(longest), value):
        return parse_duration(value)
    try:
        span: timedelta | None = parse_duration(value)
    except TooLong:
        span = None
    except ValueError:
        negative = value.strip().startswith("-")
        raise ValueError(
            "must be longer than zero"
            if negative
            else f"is not a duration such as {DURATION_EXAMPLES}"
        ) from None
    if span is None or span > longest:
        raise ValueError(f"is longer than the maximum, {format_duration(longest)}")
    if span <= timedelta(0):
        raise ValueError("must be longer than zero")
    raise ValueError(
        f"is not a duration as the API writes them: {DURATION_EXAMPLES}, largest unit first, "
        f"at most {MAX_DURATION_TEXT} characters"
    )


def duration_schema(longest: timedelta, *, description: str) -> dict[str, object]:
    """What `positive_duration(longest=longest)` takes, as the schema states it."""
    return {
        "type": "string",
        "maxLength": MAX_DURATION_TEXT,
        "pattern": spelling_pattern(longest),
        "description": f"{description} At most {format_duration(longest)}.",
    }


Duration = Annotated[
    timedelta,
    BeforeValidator(positive_duration),
    WithJsonSchema(
        {
            **duration_schema(
                LONGEST,
                description="A length such as `90m`, `4h`, `1h30m` or `2d` (a bare number is "
                "seconds), largest unit first.",
            ),
            "examples": ["4h"],
        }
    ),
]


def rfc3339_time(value: object) -> object:
    """Only what the schema promises (RFC 3339 text); pydantic alone also takes numbers."""
    if not isinstance(value, str) or re.fullmatch(RFC3339_PATTERN, value) is None:
        raise ValueError("is not an RFC 3339 time (years 2 to 9998) such as 2030-01-01T18:00:00Z")
    return value


Time = Annotated[
    AwareDatetime,
    BeforeValidator(rfc3339_time),
    WithJsonSchema({"type": "string", "format": "date-time", "pattern": RFC3339_PATTERN}),
]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)


class ExemptionRequest(_Request):
    """Exempt a workload for a duration or until a time. Give exactly one of the two."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"duration": "4h", "reason": "presenting the demo"},
                {"until": "2030-01-01T18:00:00Z", "reason": "training over the weekend"},
            ],
            # exactly one of the two is given (a null is as good as left out), as checked below
            "oneOf": [
                {
                    "required": ["duration"],
                    "properties": {"duration": {"type": "string"}, "until": {"type": "null"}},
                },
                {
                    "required": ["until"],
                    "properties": {"until": {"type": "string"}, "duration": {"type": "null"}},
                },
            ],
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
