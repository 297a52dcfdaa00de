"""`config/example.yaml`: every key of the settings tree with its default, each under a comment
that says what it is for (the field's description).

A list or map whose default is empty (notification targets, rules) is followed by the field's
`examples`, commented out with `#  ` so that removing those three characters gives entries a
reader can copy (tests/test_notice_settings.py does exactly that); no other comment starts so.
"""

from __future__ import annotations

import textwrap
from typing import Any

import yaml

from autoscaler.domain.durations import EXAMPLES as DURATION_EXAMPLES
from autoscaler.settings.reference.keys import Key, keys_of, plain
from autoscaler.settings.tree import Settings

WIDTH = 100
HEADER = f"""\
# idle-gpu-autoscaler settings: every key, with its default and what it is for.
# Generated from the settings model (autoscaler/settings/): edit the fields' descriptions there,
# never this file, then run `python -m autoscaler.settings.reference`. Reference: docs/CONFIG.md.
# Check a file with `idle-gpu-autoscaler check-config --config FILE`.
# Durations: {DURATION_EXAMPLES} (a bare number is seconds). A key left out keeps its default.
"""


def example_text() -> str:
    defaults = plain(Settings().model_dump(mode="json", by_alias=True))
    lines = HEADER.splitlines()
    for key in keys_of(Settings):
        lines += ["", *key_lines(key, defaults[key.name], indent=0)]
    return "\n".join(lines) + "\n"


def key_lines(key: Key, value: Any, *, indent: int) -> list[str]:
    pad = " " * indent
    lines = comment(key.description, indent=indent)
    shape = key.shape
    if shape.kind == "section":
        lines.append(f"{pad}{key.name}:")
        for child in key.children():
            lines += key_lines(child, value[child.name], indent=indent + 2)
    elif shape.of_sections and isinstance(value, dict) and value:  # one entry a line
        lines.append(f"{pad}{key.name}:")
        lines += [f"{pad}  {flow(name)}: {flow(entry)}" for name, entry in value.items()]
    elif shape.of_sections and value:
        lines.append(f"{pad}{key.name}:")
        lines += [f"{pad}  - {flow(entry)}" for entry in value]
    else:
        lines.append(f"{pad}{key.name}: {flow(value)}")
    if value in ([], {}):
        for example in key.info.examples or ():
            lines += [f"{pad}#  {line}" for line in block(example)]
    return lines


def comment(text: str, *, indent: int) -> list[str]:
    pad = " " * indent
    wrapped = textwrap.wrap(
        text, WIDTH - indent - 2, break_long_words=False, break_on_hyphens=False
    )
    return [f"{pad}# {line}" for line in wrapped]


def flow(value: Any) -> str:
    """One value on one line, as YAML: `5`, `1h`, `[a, b]`, `{enabled: true}`, `null`."""
    text = yaml.safe_dump(
        value, default_flow_style=True, width=10**6, allow_unicode=True, sort_keys=False
    )
    return text.removesuffix("\n...\n").strip()


def block(value: Any, *, indent: int = 0) -> list[str]:
    """A value as a person writes an entry: mappings in block style, a list of plain values on
    one line."""
    pad = " " * indent
    if _nested(value) and isinstance(value, list):
        lines = []
        for entry in value:
            first, *rest = block(entry, indent=indent + 2)
            lines += [f"{pad}- {first.lstrip()}", *rest]
        return lines
    if _nested(value) and isinstance(value, dict):
        lines = []
        for name, inner in value.items():
            if _nested(inner):
                lines += [f"{pad}{flow(name)}:", *block(inner, indent=indent + 2)]
            else:
                lines.append(f"{pad}{flow(name)}: {flow(inner)}")
        return lines
    return [f"{pad}{flow(value)}"]


def _nested(value: Any) -> bool:
    """A mapping, or a list holding one: written over several lines."""
    if isinstance(value, list):
        return any(isinstance(entry, dict) for entry in value)
    return isinstance(value, dict) and bool(value)
