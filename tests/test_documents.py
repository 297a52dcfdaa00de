"""The bounded reading of YAML and JSON documents (`core.documents`), with the C-accelerated
safe loader and with the pure-Python one it falls back to where libyaml is absent."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from autoscaler.core.documents import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_VALUES,
    SAFE_LOADER,
    DocumentRefused,
    FileRefused,
    parse_json,
    parse_yaml,
    read_text_file,
    read_yaml_file,
)
from tests.support.hostile_files import COUNTER_READ, bytes_read_by_this_thread

LOADERS = [
    pytest.param(yaml.SafeLoader, id="python-safe-loader"),
    pytest.param(getattr(yaml, "CSafeLoader", None), id="c-safe-loader"),
]


def counting(loader: type[yaml.SafeLoader]) -> type[yaml.SafeLoader]:
    """The loader, counting the events each of its parsers hands out (`parse_yaml` starts one
    to measure the document, then one to load it) and the values its constructor builds."""

    class Counting(loader):  # type: ignore[valid-type, misc]
        events_read: ClassVar[list[int]] = []  # per parser started, in turn
        values_built: ClassVar[int] = 0

        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            Counting.events_read.append(0)

        def get_event(self) -> yaml.Event:
            Counting.events_read[-1] += 1
            return super().get_event()

        def construct_object(self, node: yaml.Node, deep: bool = False) -> object:
            Counting.values_built += 1
            return super().construct_object(node, deep)

    return Counting


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def chain_of_aliases(length: int) -> str:
    """Each anchor one list deeper than the one it names: deep only once expanded."""
    lines = ["c0: &c0 [x]"] + [f"c{n}: &c{n} [*c{n - 1}]" for n in range(1, length)]
    return "\n".join(lines)


def laughs(levels: int) -> str:
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, levels)]
    return "\n".join(lines)


def test_the_c_accelerated_safe_loader_is_the_one_used_where_libyaml_is_installed() -> None:
    assert SAFE_LOADER is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    assert issubclass(SAFE_LOADER, yaml.constructor.SafeConstructor)


# Events up to the refusal: the stream's and the document's start, then the values the bound
# admits (a list's start is a value too), and the one past it, refused as it arrives.
TOO_DEEP_AT = 2 + MAX_DEPTH + 1
ONE_TOO_MANY_AT = 2 + MAX_VALUES + 1


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(
    ("text", "refusal", "events_at_most"),
    [
        pytest.param(
            nested(MAX_DEPTH + 1),
            "nested deeper than 64 levels",
            TOO_DEEP_AT,
            id="flow-just-too-deep",
        ),
        pytest.param(
            nested(100_000), "nested deeper than 64 levels", TOO_DEEP_AT, id="flow-far-too-deep"
        ),
        pytest.param(
            "".join("  " * n + "-\n" for n in range(MAX_DEPTH + 1)),
            "nested deeper than 64 levels",
            TOO_DEEP_AT,
            id="block-too-deep",
        ),
        pytest.param(  # the mapping's start; per line a key, a list, its item, the list's end
            chain_of_aliases(MAX_DEPTH + 1),
            "nested deeper",
            3 + 4 * (MAX_DEPTH + 1),
            id="deep-through-aliases",
        ),
        pytest.param(  # 9**5 values fit the bound, 9**6 do not: refused in the sixth line of 12
            laughs(9), f"more than {MAX_VALUES} values", 3 + 12 * 6, id="billion-laughs"
        ),
        pytest.param(
            "- 1\n" * (MAX_VALUES + 1),
            f"more than {MAX_VALUES} values",
            ONE_TOO_MANY_AT,
            id="long-list",
        ),
        pytest.param("a: &a [*a]", "holds it (endless)", 6, id="alias-inside-itself"),
        pytest.param("a: &a {b: [*a]}", "holds it (endless)", 8, id="alias-inside-itself-deeper"),
        pytest.param("a: [", "not valid YAML at line", 5, id="unclosed-bracket"),
    ],
)
def test_a_hostile_document_is_refused_at_the_bound_in_one_line_with_nothing_built(
    loader: type[yaml.SafeLoader] | None, text: str, refusal: str, events_at_most: int
) -> None:
    """Bounded work, counted rather than timed (the time is benchmarks/README.md's,
    "Refusing a hostile settings file"): the measure reads no event past the bound, and the
    document is never loaded, so not one value is built."""
    if loader is None:
        pytest.skip("PyYAML was built without libyaml")
    counted = counting(loader)
    with pytest.raises(DocumentRefused) as refused:
        parse_yaml(text, loader=counted)
    assert refusal in str(refused.value)
    assert "\n" not in str(refused.value) and " — " in str(refused.value)
    [events_read] = counted.events_read  # the measure's parser only: no loading started
    assert events_read <= events_at_most
    assert counted.values_built == 0


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        pytest.param("a: " + "9" * 5000, "cannot be one", id="number-past-4300-digits"),
        pytest.param("a: 2025-13-45", "cannot be one: month must be in 1..12", id="13th-month"),
        pytest.param("a: *nowhere", "not valid YAML at line 1, column 4", id="undefined-alias"),
    ],
)
def test_a_document_the_loader_refuses_is_refused_in_one_line(
    loader: type[yaml.SafeLoader] | None, text: str, refusal: str
) -> None:
    """Within the bounds, so the loader reads it, and refuses it: said in one line too."""
    if loader is None:
        pytest.skip("PyYAML was built without libyaml")
    with pytest.raises(DocumentRefused) as refused:
        parse_yaml(text, loader=loader)
    assert refusal in str(refused.value)
    assert "\n" not in str(refused.value) and " — " in str(refused.value)


@pytest.mark.parametrize("loader", LOADERS)
def test_documents_within_the_bounds_read_as_the_safe_loader_reads_them(
    loader: type[yaml.SafeLoader] | None,
) -> None:
    if loader is None:
        pytest.skip("PyYAML was built without libyaml")
    text = "\n".join(
        [
            nested(MAX_DEPTH - 1).join(["deep: ", ""]),
            chain_of_aliases(MAX_DEPTH - 1),
            laughs(5),  # 9**5 + ... values: within the bound
            "base: &base {a: 1, b: [x, y]}",
            "merged: {<<: *base, c: 3}",
        ]
    )
    assert parse_yaml(text, loader=loader) == yaml.load(text, Loader=yaml.SafeLoader)
    assert parse_yaml("", loader=loader) is None


def test_utf_16_binary_and_nul_bytes_are_refused_by_what_they_are(tmp_path: Path) -> None:
    cases = {
        "policy: {}\n".encode("utf-16"): "UTF-16 text, not UTF-8",
        "policy: {}\n".encode("utf-16-be"): "UTF-16 text, not UTF-8",
        b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00": (
            "not text: it holds NUL bytes"
        ),
        b"policy: \xc3\x28\n": "not UTF-8 text (byte 0xc3 at offset 8: binary?)",
    }
    for data, refusal in cases.items():
        path = tmp_path / "file.yaml"
        path.write_bytes(data)
        with pytest.raises(FileRefused) as refused:
            read_yaml_file(path, key="api.auth.staticTokensFile")
        assert str(refused.value).startswith(f"{path} (api.auth.staticTokensFile): {refusal}")


def test_a_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "file.yaml"
    path.write_bytes("\ufeffpolicy: {dryRun: true}\n".encode())
    assert read_yaml_file(path) == {"policy": {"dryRun": True}}


def test_a_file_over_the_limit_is_refused_from_its_size_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    with path.open("wb") as sparse:  # 5 GiB that take no room: reading it would take minutes
        sparse.truncate(5 * 1024**3)
    before = bytes_read_by_this_thread()
    with pytest.raises(
        DocumentRefused, match=f"{5 * 1024**3} bytes, over the limit of {MAX_BYTES}"
    ):
        read_text_file(path)
    assert bytes_read_by_this_thread() - before <= COUNTER_READ  # not one byte of the file


def test_a_file_without_a_size_is_read_no_further_than_the_limit() -> None:
    before = bytes_read_by_this_thread()
    with pytest.raises(DocumentRefused, match=f"more than {MAX_BYTES} bytes"):
        read_text_file(Path("/dev/zero"))  # endless, and its size says 0
    read = bytes_read_by_this_thread() - before
    # the limit and one byte, rounded up to the buffered reader's whole blocks
    assert MAX_BYTES < read <= MAX_BYTES + 1 + io.DEFAULT_BUFFER_SIZE + COUNTER_READ


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        pytest.param(nested(100_000), "nested deeper than 64 levels", id="past-the-recursion"),
        pytest.param(nested(MAX_DEPTH + 1), "nested deeper than 64 levels", id="just-too-deep"),
        pytest.param(json.dumps([0] * MAX_VALUES), f"more than {MAX_VALUES} values", id="long"),
    ],
)
def test_a_json_entry_past_the_bounds_is_refused_as_a_value_error(text: str, refusal: str) -> None:
    with pytest.raises(ValueError, match=refusal):  # what readers of a garbled entry catch
        parse_json(text)


def test_a_json_entry_within_the_bounds_reads_as_json_reads_it() -> None:
    text = json.dumps({"audit": [{"at": "2025-03-03T12:00:00Z", "x": [1, [2, {}]]}] * 100})
    assert parse_json(text) == json.loads(text)
    assert parse_json(nested(MAX_DEPTH)) == json.loads(nested(MAX_DEPTH))
