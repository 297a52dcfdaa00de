"""The settings model read as a person meets it: each key's YAML name, meaning, default, the
shape of its value and its bounds, taken from the pydantic fields and nothing else.

Every rendering (the chart's schema, the example file, the reference page) walks these keys,
so a field's description, default and bounds are written once, in its `Field`.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter
from pydantic.fields import FieldInfo

from autoscaler.settings.tree import ENVIRONMENT_OVERRIDES

# The bounds pydantic keeps in a field's metadata (Ge, MinLen, StringConstraints, pattern=...).
BOUNDS = ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern")


@dataclass(frozen=True)
class Shape:
    """What a value is: a section of keys, a list or a map of something, or a plain value
    (`scalar`: bool, int, float, str, Path, a duration, or one of a Literal's words)."""

    kind: Literal["section", "list", "map", "scalar"]
    section: type[BaseModel] | None = None
    item: Shape | None = None
    scalar: Any = None
    bounds: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_duration(self) -> bool:
        return self.kind == "scalar" and self.scalar is timedelta

    @property
    def of_sections(self) -> bool:
        """A list or map whose entries are sections (rules, owner kinds, targets)."""
        return self.item is not None and self.item.kind == "section"


@dataclass(frozen=True)
class Key:
    name: str  # camelCase, as written in YAML
    path: str  # from the root, e.g. `policy.snooze.maxDuration`, `rules[].match.namespaces`
    info: FieldInfo
    shape: Shape

    @property
    def description(self) -> str:
        """The field's description (or its section's docstring), then its environment override."""
        text = self.info.description or section_doc(self.shape)
        variables = [
            var for var, keys in ENVIRONMENT_OVERRIDES.items() if ".".join(keys) == self.path
        ]
        return " ".join([text, *(f"Environment override: {var}." for var in variables)]).strip()

    @property
    def required(self) -> bool:
        return self.info.is_required()

    @property
    def extra(self) -> dict[str, Any]:
        """Bounds only the chart's schema states (`json_schema_extra`): the service checks
        them across keys, or not at all (a priority class name that is no DNS name)."""
        extra = self.info.json_schema_extra
        return dict(extra) if isinstance(extra, Mapping) else {}

    def default(self) -> Any:
        """The default as written in YAML (durations as text); None when required."""
        if self.required:
            return None
        value = self.info.get_default(call_default_factory=True, validated_data={})
        annotation: Any = self.info.annotation
        if self.info.metadata:  # the serializer of a duration, for one
            annotation = Annotated[annotation, *self.info.metadata]
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)
        return plain(adapter.dump_python(value, mode="json", by_alias=True))

    def children(self) -> list[Key]:
        """The keys of a section, or of each entry of a list or map of sections."""
        shape = self.shape.item if self.shape.of_sections else self.shape
        assert shape is not None and shape.section is not None
        step = {"list": "[]", "map": ".<name>"}.get(self.shape.kind, "")
        return keys_of(shape.section, prefix=f"{self.path}{step}.")


def keys_of(section: type[BaseModel], *, prefix: str = "") -> list[Key]:
    found = []
    for name, info in section.model_fields.items():
        yaml_name = info.alias or name
        shape = shape_of(info.annotation, info.metadata)
        found.append(Key(yaml_name, f"{prefix}{yaml_name}", info, shape))
    return found


def shape_of(annotation: Any, metadata: Sequence[Any] = ()) -> Shape:
    annotation = _without_none(annotation)
    if get_origin(annotation) is Annotated:
        base, *more = get_args(annotation)
        return shape_of(base, [*metadata, *more])
    bounds = {
        name: getattr(m, name)
        for m in metadata
        for name in BOUNDS
        if getattr(m, name, None) is not None
    }
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return Shape("section", section=annotation)
    origin = get_origin(annotation)
    if origin in (list, tuple):
        return Shape("list", item=shape_of(get_args(annotation)[0]), bounds=bounds)
    if origin is dict:
        return Shape("map", item=shape_of(get_args(annotation)[1]), bounds=bounds)
    return Shape("scalar", scalar=annotation, bounds=bounds)


def section_doc(shape: Shape) -> str:
    """A section's own docstring, on one line: what it says when its field says nothing."""
    section = shape.item.section if shape.item is not None else shape.section
    doc = vars(section).get("__doc__") if section is not None else None
    return " ".join(inspect.cleandoc(doc).split()) if doc else ""


def plain(value: Any) -> Any:
    """Whole floats as integers (`5`, not `5.0`): YAML as a person writes it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _without_none(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [arg for arg in get_args(annotation) if arg is not type(None)]
        return rest[0] if len(rest) == 1 else annotation
    return annotation
