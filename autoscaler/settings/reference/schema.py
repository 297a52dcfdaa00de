"""The chart's `values.schema.json`, its `config` part: the settings tree as JSON Schema
(draft-07, as helm reads it), every section closed to unknown keys.

Only `config` and the grammar of durations (`definitions.duration`, `positiveDuration`) are
drawn here; the rest of the chart's schema (image, probes, the values the chart turns into
settings itself) is written by hand in the same file and kept as it is.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel

from autoscaler.domain.durations import (
    LONGEST,
    UNIT_SECONDS,
    format_duration,
    integer_range_pattern,
)
from autoscaler.settings.reference.keys import Key, Shape, keys_of
from autoscaler.settings.tree import Settings

# The chart's grammar of durations (drawn below), shared with its hand-written part.
DURATION = {"$ref": "#/definitions/duration"}
POSITIVE_DURATION = {"$ref": "#/definitions/positiveDuration"}
JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string"}
NUMBER_BOUNDS = {
    "ge": "minimum",
    "gt": "exclusiveMinimum",
    "le": "maximum",
    "lt": "exclusiveMaximum",
}
TEXT_BOUNDS = {"min_length": "minLength", "max_length": "maxLength", "pattern": "pattern"}
LIST_BOUNDS = {"min_length": "minItems", "max_length": "maxItems"}

# Keys the chart does not take under `config:`: it renders these from values of its own or
# from the install (templates/_helpers.tpl, `iga.settings`), or a pod never needs them.
NOT_IN_CHART_CONFIG = (
    "prometheus",
    "api",
    "keda",
    "leaderElection",
    "notifications",
    "policy.dryRun",
    "cluster.kubeconfig",
    "cluster.context",
    "cluster.serviceNamespace",
    "cluster.runtimeStateConfigMap",
)
CONFIG_DESCRIPTION = (
    "The service's settings (docs/CONFIG.md), rendered into its config file; the chart fills "
    "in the install-specific keys."
)


def chart_schema(current: str) -> str:
    """The chart's schema file with its `config` part and its grammar of durations drawn from
    the settings model."""
    schema = json.loads(current)
    schema["properties"]["config"] = chart_config_schema()
    schema["definitions"] |= duration_definitions()
    return json.dumps(schema, indent=2) + "\n"


# A duration's spelling as the settings read it (domain/durations.py): Go's compounds plus `d`.
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_UNITS = "(?:ns|us|µs|ms|s|m|h|d)"
DURATION_SYNTAX = rf"^\s*(?:{_NUMBER}\s*|(?:{_NUMBER}\s*{_UNITS}\s*)+)$"
_MANY_PARTS = rf"^\s*(?:{_NUMBER}\s*{_UNITS}\s*){{2,}}$"


def duration_definitions() -> dict[str, Any]:
    """`duration` and `positiveDuration`, bounded as the settings bound them: at most LONGEST.
    A number of seconds, and a duration in one unit (`36500d`, `876000h`), is held to it
    exactly; a compound (`1d12h`) only to the syntax: its parts' sum is beyond a pattern, and
    the service refuses one too long naming the key."""
    longest = format_duration(LONGEST)
    seconds = int(LONGEST.total_seconds())
    within = {"anyOf": [{"pattern": _one_part_within()}, {"pattern": _MANY_PARTS}]}
    words = f"at most {longest} (a century), as the service refuses a longer one"
    return {
        "duration": {
            "description": f"A duration: 90s, 15m, 1h30m, 7d (Go's compounds, plus d for "
            f"days), or a number of seconds; {words}.",
            "anyOf": [
                {"type": "string", "allOf": [{"pattern": DURATION_SYNTAX}, within]},
                {"type": "number", "minimum": 0, "maximum": seconds},
            ],
        },
        "positiveDuration": {
            "description": "A duration longer than zero: 30s, 15m, 1h30m, 7d, or a number of "
            f"seconds; {words}.",
            "anyOf": [
                {
                    "type": "string",
                    "allOf": [{"pattern": DURATION_SYNTAX}, {"pattern": "[1-9]"}, within],
                },
                {"type": "number", "exclusiveMinimum": 0, "maximum": seconds},
            ],
        },
    }


def _one_part_within() -> str:
    """A bare number of seconds, or a number and one unit, at most LONGEST."""
    options = []
    for unit, size in (("", 1), *UNIT_SECONDS.items()):
        most = round(LONGEST.total_seconds() / size)
        below = integer_range_pattern(0, most - 1)
        options.append(rf"0*(?:{below}(?:\.\d*)?|{most}(?:\.0*)?|\.\d+)\s*{re.escape(unit)}")
    return rf"^\s*(?:{'|'.join(options)})\s*$"


def chart_config_schema() -> dict[str, Any]:
    config = section_schema(Settings, description=CONFIG_DESCRIPTION)
    for path in NOT_IN_CHART_CONFIG:
        *parents, leaf = path.split(".")
        node = config
        for parent in parents:
            node = node["properties"][parent]
        del node["properties"][leaf]
    return config


def section_schema(section: type[BaseModel], *, description: str = "") -> dict[str, Any]:
    keys = keys_of(section)
    schema: dict[str, Any] = {"type": "object"}
    if description:
        schema["description"] = description
    schema["properties"] = {key.name: key_schema(key) for key in keys}
    schema["additionalProperties"] = False
    required = [key.name for key in keys if key.required]
    if required:
        schema["required"] = required
    extra = section.model_config.get("json_schema_extra")
    return merged(schema, extra) if isinstance(extra, dict) else schema


def key_schema(key: Key) -> dict[str, Any]:
    extra = key.extra
    # A duration another check keeps above zero says so with `exclusiveMinimum: 0`.
    positive = key.shape.is_duration and extra.pop("exclusiveMinimum", None) == 0
    value = value_schema(key.shape, positive=positive)
    described = {"description": key.description, **value} if key.description else value
    return merged(described, extra)


def value_schema(shape: Shape, *, positive: bool = False) -> dict[str, Any]:
    if shape.kind == "section":
        assert shape.section is not None
        return section_schema(shape.section)
    if shape.kind in ("list", "map"):
        assert shape.item is not None
        if shape.kind == "map":
            return {"type": "object", "additionalProperties": value_schema(shape.item)}
        return {"type": "array", "items": value_schema(shape.item)} | _bounds(shape, LIST_BOUNDS)
    if shape.is_duration:
        return POSITIVE_DURATION if positive or _above_zero(shape) else DURATION
    if get_origin(shape.scalar) is Literal:
        return {"enum": list(get_args(shape.scalar))}
    kind = JSON_TYPES.get(shape.scalar, "string")  # a Path is written as text
    bounds = NUMBER_BOUNDS if kind in ("integer", "number") else TEXT_BOUNDS
    return {"type": kind} | _bounds(shape, bounds)


def merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`extra` laid over `base`, nested objects merged key by key."""
    out = dict(base)
    for name, value in extra.items():
        inner = out.get(name)
        both = isinstance(inner, dict) and isinstance(value, dict)
        out[name] = merged(inner, value) if both else value  # type: ignore[arg-type]
    return out


def _bounds(shape: Shape, names: dict[str, str]) -> dict[str, Any]:
    return {names[name]: value for name, value in shape.bounds.items() if name in names}


def _above_zero(shape: Shape) -> bool:
    lowest = shape.bounds.get("gt")
    return isinstance(lowest, timedelta) and lowest >= timedelta(0)
