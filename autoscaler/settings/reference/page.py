"""`docs/CONFIG.md`: the settings reference, one table per section of the tree, each key with
its type, default and meaning (the field's description)."""

from __future__ import annotations

from typing import Any

from autoscaler.domain.durations import EXAMPLES as DURATION_EXAMPLES
from autoscaler.domain.durations import LONGEST, format_duration
from autoscaler.settings.reference.example import flow
from autoscaler.settings.reference.keys import Key, keys_of, plain
from autoscaler.settings.reference.schema import value_schema
from autoscaler.settings.tree import ENVIRONMENT_OVERRIDES, REMOVED_KEYS, Settings

HEADER = f"""\
# Settings reference

<!-- Generated from the settings model (autoscaler/settings/) by
`python -m autoscaler.settings.reference`: edit the fields' descriptions there, never this page. -->

The service reads one YAML file, `idle-gpu-autoscaler serve --config FILE`. Keys are camelCase;
a key left out keeps its default, an unknown one is refused naming it and the nearest known key
("did you mean"), or the keys allowed there. Durations are written {DURATION_EXAMPLES} (a bare
number is seconds), at most {format_duration(LONGEST)}.
`idle-gpu-autoscaler check-config --config FILE` checks a file and prints the effective settings.
[config/example.yaml](../config/example.yaml) lists every key with its default; the Helm chart
renders the same file from its `config:` value and a few values of its own
(charts/idle-gpu-autoscaler/values.yaml).

A file with problems is refused with all of them at once (exit code 2), one `error:` line each,
sorted by path, then their count: each line names the key, what is wrong and what to write.
Paths are written as the file is: keys joined by dots, list entries by their place in brackets,
counted from 0 (`rules[0]` is the first rule; `rules[1].match.namespaces[0]`). A value set from
the environment names its variable after the path. A check across keys (a rule name used twice,
a target no `notifications.targets` names) is skipped only when a value it reads did not parse.
"""


def page_text() -> str:
    defaults = plain(Settings().model_dump(mode="json", by_alias=True))
    parts = [HEADER, environment(), removed()]
    for key in keys_of(Settings):
        parts.append(section(key, defaults[key.name]))
    return "\n".join(parts)


def environment() -> str:
    rows = [f"| `{var}` | `{'.'.join(keys)}` |" for var, keys in ENVIRONMENT_OVERRIDES.items()]
    return "\n".join(
        [
            "## Environment overrides\n",
            "Secrets and URLs can come from the environment, so a chart can mount them without "
            "templating the file.\n",
            "| Variable | Overrides |",
            "|---|---|",
            *rows,
            "",
        ]
    )


def removed() -> str:
    rows = [f"| `{key}` | {escaped(instead)} |" for key, instead in REMOVED_KEYS.items()]
    return "\n".join(
        [
            "## Removed keys\n",
            "A file that still has one is refused, naming what to write instead.\n",
            "| Key | Write instead |",
            "|---|---|",
            *rows,
            "",
        ]
    )


def section(key: Key, value: Any) -> str:
    lines = [f"## `{key.name}`\n", f"{key.description}\n"]
    lines += ["| Key | Type | Default | Meaning |", "|---|---|---|---|"]
    lines += rows(key, value, top=True)
    return "\n".join([*lines, ""])


def rows(key: Key, value: Any, *, top: bool = False) -> list[str]:
    """This key's row (a section's own row only when nested), then its keys' rows."""
    shape = key.shape
    found = [] if top else [row(key, value)]
    if shape.kind == "section" or shape.of_sections:
        for child in key.children():  # an entry's keys, or an unset section's: their defaults
            inner = value.get(child.name) if shape.kind == "section" and value else None
            found += rows(child, child.default() if inner is None else inner)
    return found


def row(key: Key, value: Any) -> str:
    if key.shape.kind == "section":
        default = ""
    elif key.required:
        default = "required"
    else:
        default = "unset" if value is None else f"`{flow(value)}`"
    kind = type_text(value_schema(key.shape, positive=key.extra.get("exclusiveMinimum") == 0))
    return f"| `{key.path}` | {kind} | {default} | {escaped(key.description)} |"


def type_text(schema: dict[str, Any]) -> str:
    """What a value may be, in a few words: `duration > 0`, `integer ≥ 0`, `list of string`."""
    if "$ref" in schema:
        return "duration > 0" if schema["$ref"].endswith("positiveDuration") else "duration"
    if "enum" in schema:
        return " \\| ".join(f"`{word}`" for word in schema["enum"])
    kind = schema["type"]
    if kind == "array":
        return f"list of {type_text(schema['items'])}"
    if kind == "object":
        inner = schema.get("additionalProperties")
        return f"map of {type_text(inner)}" if isinstance(inner, dict) else "section"
    limits = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}
    bounds = [f"{sign} {schema[name]}" for name, sign in limits.items() if name in schema]
    return " ".join([kind, ", ".join(bounds)]).strip()


def escaped(text: str) -> str:
    return text.replace("|", "\\|")
