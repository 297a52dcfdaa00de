"""A settings file's problems, all of them in one pass, each on one line in one path style.

Paths are written as the file is: keys as spelled in YAML (camelCase) joined by dots, list
entries by their 0-based place in the file in brackets, `rules[1].match.namespaces[0]`.
Every line names what is wrong and what to write instead: the valid values, the range, the
format, or, for an unknown key, the nearest known one ("did you mean") or the keys allowed
there.

`validated` reads a file's tree with pydantic and, where some values do not parse, leaves each
of them out (the nearest key holding it) and reads again, so the file's other values are still
there for the checks across keys; the paths left out are returned, so a check that reads one
is skipped (`CrossCheck.runs_on`) rather than judging a default the file never said.
"""

from __future__ import annotations

import copy
import difflib
import re
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, Generic, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from autoscaler.domain.durations import EXAMPLES, LONGEST, TooLong, format_duration

Location = tuple[str | int, ...]
Model = TypeVar("Model", bound=BaseModel)

# Each round leaves out at least one key; a file needing more rounds than this has its checks
# across keys skipped (its parse errors are all reported anyway).
MAX_ROUNDS = 20
DURATION_FORMAT = f"a duration such as {EXAMPLES} (a bare number is seconds), at most " + (
    format_duration(LONGEST)
)
_SHOWN_INPUT = 40  # characters of a value echoed back: enough to recognise, never a screenful
_NAMED_KEY = re.compile(r"(?P<key>[A-Za-z][A-Za-z0-9.]*): (?P<rest>.+)", re.DOTALL)
_PATH_PART = re.compile(r"\[(\d*)\]|\.?([^.\[]+)")


def written_path(location: Sequence[str | int]) -> str:
    """`("rules", 1, "match", "namespaces", 0)` → `rules[1].match.namespaces[0]`."""
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or "the file"


def path_order(line: str) -> tuple[tuple[int, int | str], ...]:
    """The sort key of a problem line by its leading path, entries in numeric order."""
    path = line.split(":", 1)[0].split(" ", 1)[0]
    return tuple((0, int(index)) if index else (1, key) for index, key in _PATH_PART.findall(path))


def closest_key(key: str, known: Sequence[str]) -> str | None:
    """The known key nearest `key`, case, `_` and `-` aside; None when none is close."""
    plain = {_folded(name): name for name in known}
    found = difflib.get_close_matches(_folded(key), list(plain), n=1, cutoff=0.6)
    return plain[found[0]] if found else None


def _folded(key: str) -> str:
    return key.lower().replace("_", "").replace("-", "")


ANY_ENTRY = -1  # `[*]` in a path a check reads


@dataclass(frozen=True)
class CrossCheck:
    """A check across keys: what it reads, as paths with `[*]` for any entry, and the check."""

    reads: tuple[str, ...]
    check: Callable[[Any], list[str]]

    def runs_on(self, left_out: Sequence[Location]) -> bool:
        """False when any value it reads did not parse (and was left out)."""
        return not any(_overlap(_parts(read), gone) for read in self.reads for gone in left_out)


def _parts(path: str) -> Location:
    """`rules[*].match` → `("rules", ANY_ENTRY, "match")`."""
    parts = _PATH_PART.findall(path.replace("[*]", "[]"))
    return tuple(int(index) if index else key or ANY_ENTRY for index, key in parts)


def _overlap(read: Location, gone: Location) -> bool:
    """One path lies within the other (ANY_ENTRY in `read` is any entry)."""
    return all(
        r == g or (r == ANY_ENTRY and isinstance(g, int)) for r, g in zip(read, gone, strict=False)
    )


@dataclass(frozen=True)
class Checked(Generic[Model]):
    """What `validated` found: the tree (None when none could be read), the problems, and the
    paths left out because their values did not parse."""

    tree: Model | None
    problems: list[str]
    left_out: list[Location]


def validated(
    model: type[Model],
    raw: Mapping[str, Any],
    *,
    removed: Mapping[str, str],
) -> Checked[Model]:
    """`raw` read as `model`, every problem described; `removed`: keys refused naming their
    replacement."""
    working: Any = copy.deepcopy(dict(raw))
    problems: list[str] = []
    left_out: list[Location] = []
    for _ in range(MAX_ROUNDS):
        try:
            return Checked(model.model_validate(working), problems, left_out)
        except ValidationError as exc:
            errors = exc.errors()
        earlier = list(left_out)
        problems += [
            describe(model, error, removed=removed)
            for error in errors
            if not any(_overlap(gone, tuple(error["loc"])) for gone in earlier)  # ours, if so
        ]
        gone_now = [_set_aside(model, working, tuple(error["loc"]), left_out) for error in errors]
        if not any(gone_now):  # nothing left to leave out: no tree to check across keys
            break
        left_out += [gone for gone in gone_now if gone]
    return Checked(None, problems, [()])  # the root left out: no check across keys runs


def _set_aside(
    model: type[BaseModel], raw: Any, location: Location, left_out: Sequence[Location]
) -> Location | None:
    """A text or a boolean that is missing or does not parse (a rule without `name`, or with
    `name: Bad`) is given a stand-in, once, so its entry stays in place for the checks that do
    not read that key (left out as a required key cannot be); any other value that does not
    parse is left out (`_leave_out`)."""
    parent = _node_at(raw, location[:-1])
    stand_in = _STAND_INS.get(_annotation_at(model, location), _NONE)
    if location in left_out or not isinstance(parent, dict) or stand_in is _NONE:
        return _leave_out(raw, location)
    parent[location[-1]] = stand_in
    return location


# A stand-in for a required key, by its type: it only has to parse, since every check that
# reads the key is skipped. A type without one has its entry left out instead.
_NONE = object()
_STAND_INS: dict[Any, object] = {bool: False, str: "unset"}


def _node_at(raw: Any, location: Location) -> Any:
    node = raw
    for part in location:
        if not _holds(node, part):
            return None
        node = node[part]
    return node


def _holds(node: Any, part: str | int) -> bool:
    """Whether `node`, a mapping or a list, has a value at `part`."""
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _leave_out(raw: Any, location: Location) -> Location | None:
    """Deletes the nearest mapping key at or above `location`; its path, or None if none."""
    node, found, holder = raw, None, None
    for depth, part in enumerate(location):
        if not _holds(node, part):
            break
        if isinstance(node, dict):
            found, holder = location[: depth + 1], node
        node = node[part]
    if found is None or holder is None:
        return None
    del holder[found[-1]]
    return found


def describe(model: type[BaseModel], error: ErrorDetails, *, removed: Mapping[str, str]) -> str:
    """One line: the path, what is wrong, what to write instead."""
    location = tuple(error["loc"])
    path = written_path(location)
    if error["type"] == "extra_forbidden":
        if path in removed:
            return f"{path}: removed at 1.0; write {removed[path]}"
        return f"{path}: unknown key; {_known_keys(model, location)}"
    value = _annotation_at(model, location)
    text = _wrong(error, value, _field_at(model, location))
    named = _NAMED_KEY.match(text)  # a section's own check names its key: `slot: must …`
    if named and _annotation_at(model, (*location, *named["key"].split("."))) is not None:
        return f"{written_path((*location, *named['key'].split('.')))}: {named['rest']}"
    return f"{path}: {text}"


def _known_keys(model: type[BaseModel], location: Location) -> str:
    section = _annotation_at(model, location[:-1])
    if not (isinstance(section, type) and issubclass(section, BaseModel)):
        return "remove it"
    known = [info.alias or name for name, info in section.model_fields.items()]
    near = closest_key(str(location[-1]), known)
    if near is not None:
        return f'did you mean "{near}"?'
    where = written_path(location[:-1]) if location[:-1] else "the top level"
    return f"valid keys at {where}: {', '.join(known)}"


def _wrong(error: ErrorDetails, value: Any, field: FieldInfo | None) -> str:
    kind, context = error["type"], error.get("ctx") or {}
    if kind == "missing":
        return f"required: add it ({_expected(value, field)})"
    if kind == "value_error":
        text = str(context.get("error", error["msg"]))
        below = value is timedelta and not isinstance(context.get("error"), TooLong)
        return f"{text}, at most {format_duration(LONGEST)}" if below else text
    if kind in _COMPARED:
        return _compared(error, value, field) + _found(error)
    if kind == "literal_error":
        text = f"must be {context.get('expected', '')}"
    elif kind in ("too_long", "too_short"):
        most = "at most" if kind == "too_long" else "at least"
        bound = context.get("max_length" if kind == "too_long" else "min_length")
        return f"must have {most} {bound} entries (found {context.get('actual_length')})"
    elif kind == "string_pattern_mismatch" and field is not None:
        text = f"must match {context.get('pattern')}: {_first_sentence(field)}"
    else:
        text = re.sub(r"^(Input|String|List|Dictionary) should (be|have)", r"must \2", error["msg"])
        typed = kind.endswith(("_type", "_parsing"))
        text = f"must be {_expected(value, field)}" if value and typed else text
    return text + _found(error)


def _compared(error: ErrorDetails, value: Any, field: FieldInfo | None) -> str:
    """`must be at least 0`, `must be longer than 0s`: the bound as the file writes it."""
    name, words = _COMPARED[error["type"]]
    if value is timedelta:  # pydantic's context holds the bound's repr: read the field's
        bounds = [getattr(m, name, None) for m in (field.metadata if field else [])]
        shown = next((format_duration(b) for b in bounds if isinstance(b, timedelta)), "0s")
        return f"must be {words[1]} {shown}"
    return f"must be {words[0]} {_number((error.get('ctx') or {}).get(name))}"


# Each comparison: its bound's name, its words (for a number, for a duration).
_COMPARED = {
    "greater_than": ("gt", ("more than", "longer than")),
    "greater_than_equal": ("ge", ("at least", "at least")),
    "less_than": ("lt", ("less than", "shorter than")),
    "less_than_equal": ("le", ("at most", "at most")),
}


def _expected(value: Any, field: FieldInfo | None) -> str:
    """What the key takes, in a few words."""
    shape = get_origin(value) or value
    if isinstance(value, type) and issubclass(value, BaseModel):
        shape = dict
    if shape is Literal:
        return "one of " + ", ".join(str(word) for word in get_args(value))
    if value in (int, float):
        bounds = [bound for m in (field.metadata if field else []) if (bound := _bound(m))]
        return " ".join(
            ["an integer" if value is int else "a number", " and ".join(bounds)]
        ).strip()
    return _WORDS.get(shape) or (_first_sentence(field) if field is not None else "text")


# What a value of each shape is, in the words of an error's next step.
_WORDS: dict[Any, str] = {
    timedelta: DURATION_FORMAT,
    bool: "true or false",
    list: "a list, one entry a line starting `- `",
    tuple: "a list, one entry a line starting `- `",
    dict: "a mapping of keys, one a line as `key: value`",
}


def _bound(metadata: object) -> str:
    for name, words in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
        bound = getattr(metadata, name, None)
        if bound is not None:
            return f"{words} {_number(bound)}"
    return ""


def _number(value: object) -> object:
    """`100`, not `100.0`: as a person writes it."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _first_sentence(field: FieldInfo) -> str:
    text = field.description or ""
    return text.split(". ", 1)[0].rstrip(".") or "text"


def _found(error: ErrorDetails) -> str:
    given = error.get("input")
    if isinstance(given, bool | int | float) or (
        isinstance(given, str) and error["type"] != "missing"
    ):
        shown = repr(given)
        return f" (found {shown if len(shown) <= _SHOWN_INPUT else shown[:_SHOWN_INPUT] + '…'})"
    return ""


def _annotation_at(model: type[BaseModel], location: Location) -> Any:
    """The (unwrapped) type of the value at `location`, or None when the path leaves the tree."""
    current: Any = model
    for part in location:
        current = _step(current, part)
        if current is None:
            return None
    return current


def _field_at(model: type[BaseModel], location: Location) -> FieldInfo | None:
    parent = _annotation_at(model, location[:-1]) if location else None
    if isinstance(parent, type) and issubclass(parent, BaseModel):
        return _field(parent, location[-1])
    return None


def _step(current: Any, part: str | int) -> Any:
    if isinstance(current, type) and issubclass(current, BaseModel):
        field = _field(current, part)
        return None if field is None else _unwrapped(field.annotation)
    origin = get_origin(current)
    if origin in (list, tuple) and isinstance(part, int):
        return _unwrapped(get_args(current)[0])
    if origin is dict:
        return _unwrapped(get_args(current)[1])
    return None


def _field(section: type[BaseModel], part: str | int) -> FieldInfo | None:
    for name, info in section.model_fields.items():
        if part in (name, info.alias):
            return info
    return None


def _unwrapped(annotation: Any) -> Any:
    """`X | None` → X; `Annotated[X, ...]` → X (a Duration → timedelta)."""
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [arg for arg in get_args(annotation) if arg is not type(None)]
        annotation = rest[0] if len(rest) == 1 else annotation
    if get_origin(annotation) is Annotated:
        return _unwrapped(get_args(annotation)[0])
    return annotation


def with_source(line: str, from_environment: Mapping[str, str]) -> str:
    """A problem of a value the environment set names its variable after the path."""
    path = line.split(":", 1)[0]
    variable = from_environment.get(path)
    if variable is None:
        return line
    return f"{path} (from {variable}){line[len(path) :]}; fix or unset {variable}"
