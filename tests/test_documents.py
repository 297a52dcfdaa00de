"""The bounded reading of YAML and JSON documents (`core.documents`), with the C-accelerated
safe loader and with the pure-Python one it falls back to where libyaml is absent."""

from __future__ import annotations

import json
import time
from pathlib import Path

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

LOADERS = [
    pytest.param(yaml.SafeLoader, id="python-safe-loader"),
    pytest.param(getattr(yaml, "CSafeLoader", None), id="c-safe-loader"),
]
# Seconds a refusal may take: the pure-Python parser reads 100,000 values in about two.
WITHIN = {yaml.SafeLoader: 5.0, getattr(yaml, "CSafeLoader", None): 1.0}


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


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        pytest.param(
            nested(MAX_DEPTH + 1), "nested deeper than 64 levels", id="flow-just-too-deep"
        ),
        pytest.param(nested(100_000), "nested deeper than 64 levels", id="flow-far-too-deep"),
        pytest.param(
            "".join("  " * n + "-\n" for n in range(MAX_DEPTH + 1)),
            "nested deeper than 64 levels",
            id="block-too-deep",
        ),
        pytest.param(chain_of_aliases(MAX_DEPTH + 1), "nested deeper", id="deep-through-aliases"),
        pytest.param(laughs(9), f"more than {MAX_VALUES} values", id="billion-laughs"),
        pytest.param("- 1\n" * (MAX_VALUES + 1), f"more than {MAX_VALUES} values", id="long-list"),
        pytest.param("a: &a [*a]", "holds it (endless)", id="alias-inside-itself"),
        pytest.param("a: &a {b: [*a]}", "holds it (endless)", id="alias-inside-itself-deeper"),
        pytest.param("a: " + "9" * 5000, "cannot be one", id="number-past-4300-digits"),
        pytest.param("a: 2025-13-45", "cannot be one: month must be in 1..12", id="13th-month"),
        pytest.param("a: *nowhere", "not valid YAML at line 1, column 4", id="undefined-alias"),
        pytest.param("a: [", "not valid YAML at line", id="unclosed-bracket"),
    ],
)
def test_a_hostile_document_is_refused_quickly_in_one_line(
    loader: type[yaml.SafeLoader] | None, text: str, refusal: str
) -> None:
    if loader is None:
        pytest.skip("PyYAML was built without libyaml")
    started = time.monotonic()
    with pytest.raises(DocumentRefused) as refused:
        parse_yaml(text, loader=loader)
    assert time.monotonic() - started < WITHIN[loader]
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
    started = time.monotonic()
    with pytest.raises(
        DocumentRefused, match=f"{5 * 1024**3} bytes, over the limit of {MAX_BYTES}"
    ):
        read_text_file(path)
    assert time.monotonic() - started < 0.1


def test_a_file_without_a_size_is_read_no_further_than_the_limit() -> None:
    started = time.monotonic()
    with pytest.raises(DocumentRefused, match=f"more than {MAX_BYTES} bytes"):
        read_text_file(Path("/dev/zero"))  # endless, and its size says 0
    assert time.monotonic() - started < 1.0


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
