"""Every YAML or JSON document the service reads, read within bounds.

The settings file, the static tokens file and the runtime-state ConfigMap's entries are
written by people, or by whoever may edit them, so none of them may cost more than a settings
file costs: a file over `MAX_BYTES` is refused from its size alone, before a byte is read;
a file that is not UTF-8 text (binary, UTF-16) is refused naming what it is; a document
nested deeper than `MAX_DEPTH` or holding more than `MAX_VALUES` values once its aliases are
expanded ("billion laughs": nine aliases of nine aliases of ... fit in a few hundred bytes)
is refused before anything walks it. YAML is read with PyYAML's safe loader, its C-accelerated
form where the libyaml extension is installed.

Every refusal is one line, `<file>: <what> — <what to do>` (`FileRefused`), which
`check-config` and `serve` print after `error: ` and exit 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from autoscaler.core.errors import ConfigError
from autoscaler.domain.text import clip

# A ConfigMap or a Secret holds at most 1 MiB (the API server's limit), so no settings file
# mounted from one is larger; the example configuration, every key documented, is 28 kB.
MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64  # the settings nest five levels at most (rules, a rule, match, a label, …)
MAX_VALUES = 100_000  # every scalar, list and mapping counted, aliases expanded

# `CSafeLoader` is the safe loader over libyaml (C); the pure-Python one where it is absent.
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_LIBYAML_DEPTH = "exceeded maximum nesting depth"  # libyaml's own bound (1000), said our way


class DocumentRefused(ValueError):
    """A document refused: what is wrong with it, and what to do about it."""

    def __init__(self, what: str, todo: str) -> None:
        super().__init__(f"{what} — {todo}")


class FileRefused(ConfigError):
    """A file refused before any of its keys is read: one line, naming the file."""

    def __init__(self, path: Path, refused: DocumentRefused, *, key: str | None = None) -> None:
        where = str(path) if key is None else f"{path} ({key})"
        self.line = f"{where}: {refused}"
        super().__init__([self.line])

    def __str__(self) -> str:
        return self.line


def read_yaml_file(path: Path, *, key: str | None = None) -> Any:
    """The file's YAML document (None when it is empty); `key`: the setting that named the
    file, shown beside it. Raises FileRefused."""
    try:
        return parse_yaml(read_text_file(path))
    except DocumentRefused as refused:
        raise FileRefused(path, refused, key=key) from None


def read_text_file(path: Path, *, limit: int = MAX_BYTES) -> str:
    """The file's text, refused over `limit` bytes (judged from its size first, then by reading
    no more than one byte past it: a pipe or a device has no size) or when not UTF-8."""
    try:
        with path.open("rb") as opened:
            size = path.stat().st_size
            if size > limit:
                raise _too_large(size, limit)
            data = opened.read(limit + 1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise DocumentRefused(
            f"cannot read: {reason}", "check the path and its permissions"
        ) from None
    if len(data) > limit:
        raise _too_large(len(data), limit, more=True)
    return decode_utf8(data)


def decode_utf8(data: bytes) -> str:
    """UTF-8 text, a leading byte-order mark dropped; anything else refused by what it is."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or _looks_utf16(data):
        raise DocumentRefused(
            "UTF-16 text, not UTF-8", "save it as UTF-8 (iconv -f UTF-16 -t UTF-8 FILE)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentRefused(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}: binary?)",
            "give a YAML text file saved as UTF-8",
        ) from None
    if "\x00" in text:
        raise DocumentRefused("not text: it holds NUL bytes (binary?)", "give a YAML text file")
    return text.removeprefix("\ufeff")


def parse_yaml(text: str, *, loader: type[yaml.SafeLoader] = SAFE_LOADER) -> Any:
    """One YAML document, measured from its events (`_measure_events`) before it is built,
    then safe-loaded. Raises DocumentRefused."""
    try:
        _measure_events(yaml.parse(text, Loader=loader))
        return yaml.load(text, Loader=loader)  # a safe loader: SAFE_LOADER or a test's
    except DocumentRefused:
        raise
    except yaml.MarkedYAMLError as exc:
        raise _not_yaml(exc) from None
    except yaml.YAMLError as exc:
        raise DocumentRefused(f"not valid YAML: {_one_line(str(exc))}", _FIX_YAML) from None
    except ValueError as exc:  # a number past Python's 4300 digits, a 13th month
        raise DocumentRefused(
            f"a value YAML reads as a number or a date cannot be one: {_first_clause(exc)}",
            "quote it if it is text",
        ) from None


def _measure_events(events: Iterable[yaml.Event]) -> None:
    """Raises DocumentRefused as soon as the events nest deeper than MAX_DEPTH or count more
    than MAX_VALUES values, an alias counted as all it names, or an alias names a list or
    mapping still open (`&a [*a]`, endless). The parser's events come one at a time and nothing
    recurses, so a refusal costs no more than the events read up to it."""
    tally = _Tally()
    for event in events:
        if isinstance(event, yaml.CollectionStartEvent):
            tally.open(event.anchor)
        elif isinstance(event, yaml.CollectionEndEvent):
            tally.close()
        elif isinstance(event, yaml.AliasEvent):
            tally.alias(event.anchor or "")
        elif isinstance(event, yaml.ScalarEvent):
            tally.scalar(event.anchor)


class _Tally:
    """The values and depth of a document as its events arrive."""

    def __init__(self) -> None:
        self.anchors: dict[str, tuple[int, int]] = {}  # anchor → (values, depth) it names
        # The lists and mappings open, outermost first: [anchor, values, depth from it down].
        self.frames: list[list[Any]] = []
        self.total = 0

    def open(self, anchor: str | None) -> None:
        self._count(1)
        self.frames.append([anchor, 1, 1])
        if len(self.frames) > MAX_DEPTH:
            raise _too_deep()

    def close(self) -> None:
        anchor, values, depth = self.frames.pop()
        self._settle(anchor, values=values, depth=depth)

    def scalar(self, anchor: str | None) -> None:
        self._count(1)
        self._settle(anchor, values=1, depth=0)

    def alias(self, anchor: str) -> None:
        if any(frame[0] == anchor for frame in self.frames):
            raise DocumentRefused(
                "an alias names a list or mapping that holds it (endless)",
                "point each alias at an anchor outside itself",
            )
        values, depth = self.anchors.get(anchor, (1, 0))  # undefined: the loader refuses it
        self._count(values)
        self._settle(None, values=values, depth=depth)

    def _count(self, values: int) -> None:
        self.total += values
        if self.total > MAX_VALUES:
            raise _too_many()

    def _settle(self, anchor: str | None, *, values: int, depth: int) -> None:
        """A value has ended: named by its anchor, and one value of the list or mapping open."""
        if anchor is not None:
            self.anchors[anchor] = (values, depth)
        if self.frames:
            parent = self.frames[-1]
            parent[1] += values
            parent[2] = max(parent[2], depth + 1)
            if len(self.frames) - 1 + parent[2] > MAX_DEPTH:
                raise _too_deep()


def parse_json(text: str) -> Any:
    """One JSON document (a runtime-state entry), refused past MAX_DEPTH or MAX_VALUES.
    Raises DocumentRefused, a ValueError as `json.loads`'s own errors are, so a caller that
    reads a garbled entry safely reads this one safely too."""
    try:
        loaded = json.loads(text)
    except RecursionError:  # the decoder recurses once per level, up to Python's limit
        raise _too_deep(_REWRITE_ENTRY) from None
    _measure_tree(loaded)
    return loaded


_REWRITE_ENTRY = "rewrite or remove the entry (the service writes it flat)"


def _measure_tree(document: Any) -> None:
    """A decoded JSON document is a tree (JSON has no aliases): walked once, no recursion."""
    pending: list[tuple[Any, int]] = [(document, 0)]
    values = 0
    while pending:
        node, depth = pending.pop()
        values += 1 + (len(node) if isinstance(node, dict) else 0)  # a mapping's keys too
        if values > MAX_VALUES:
            raise DocumentRefused(f"more than {MAX_VALUES} values", _REWRITE_ENTRY)
        if isinstance(node, dict | list):
            if depth >= MAX_DEPTH:
                raise _too_deep(_REWRITE_ENTRY)
            children = node.values() if isinstance(node, dict) else node
            pending.extend((child, depth + 1) for child in children)


_FIX_YAML = "fix the YAML there"


def _not_yaml(exc: yaml.MarkedYAMLError) -> DocumentRefused:
    if exc.problem == _LIBYAML_DEPTH:
        return _too_deep()
    mark = exc.problem_mark or exc.context_mark
    where = "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"
    problem = _one_line(" ".join(filter(None, (exc.context, exc.problem))) or "unreadable")
    return DocumentRefused(f"not valid YAML{where}: {problem}", _FIX_YAML)


def _too_many() -> DocumentRefused:
    return DocumentRefused(
        f"more than {MAX_VALUES} values, each alias counted as all it names",
        "a settings file holds a few hundred; check that the path names the right file",
    )


def _too_deep(todo: str = "no setting nests that deep; check the indentation") -> DocumentRefused:
    return DocumentRefused(f"nested deeper than {MAX_DEPTH} levels", todo)


def _too_large(size: int, limit: int, *, more: bool = False) -> DocumentRefused:
    shown = f"more than {limit} bytes" if more else f"{size} bytes"
    return DocumentRefused(
        f"{shown}, over the limit of {limit} bytes (1 MiB, a ConfigMap's or Secret's most)",
        "check that the path names the right file",
    )


def _looks_utf16(data: bytes) -> bool:
    """UTF-16 without a byte-order mark: mostly ASCII, so a NUL byte beside most characters
    and never between them (a binary file has NULs on both sides)."""
    head = data[:64]
    even, odd = head[::2].count(0), head[1::2].count(0)
    most = len(head) // 2 * 3 // 4
    return len(head) >= 4 and ((odd >= most and even == 0) or (even >= most and odd == 0))


def _first_clause(exc: ValueError) -> str:
    """Python's reason without its advice (`use sys.set_int_max_str_digits()`: not ours)."""
    return _one_line(str(exc).split(";")[0])


def _one_line(text: str) -> str:
    return clip(" ".join(text.split()), 200)
