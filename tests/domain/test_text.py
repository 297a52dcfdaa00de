"""What may reach a terminal, and how the rest is spelled out."""

from __future__ import annotations

import pytest

from autoscaler.domain.text import clip, escape, unsafe_characters


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        pytest.param("plain text, é and 🎉", "plain text, é and 🎉", id="printable-unchanged"),
        pytest.param("a\x1b[2Jb", "a\\x1b[2Jb", id="escape"),
        pytest.param("a\rb\nc\td", "a\\x0db\\x0ac\\x09d", id="cr-lf-tab"),
        pytest.param("\x00\x7f\x9b", "\\x00\\x7f\\x9b", id="nul-del-c1"),
        pytest.param("\u202ab\u202e\u2066\u2069", "\\u202ab\\u202e\\u2066\\u2069", id="bidi"),
        pytest.param("a\u061cb\u200ec\u200f", "a\\u061cb\\u200ec\\u200f", id="bidi-marks"),
        pytest.param("one\u2028two\u2029", "one\\u2028two\\u2029", id="line-separators"),
        pytest.param("\x85next", "\\x85next", id="next-line-c1"),
        pytest.param(
            "a\u200bb\u200cc\u200dd", "a\\u200bb\\u200cc\\u200dd", id="zero-width-space-joiners"
        ),
        pytest.param("\u2060\ufeffx", "\\u2060\\ufeffx", id="word-joiner-bom"),
        pytest.param(
            "ok\U000e0001\U000e0068\U000e007f",
            "ok\\U000e0001\\U000e0068\\U000e007f",
            id="tag-characters",
        ),
    ],
)
def test_escape_spells_out_control_and_bidi_characters(text: str, shown: str) -> None:
    assert escape(text) == shown
    assert unsafe_characters(escape(text)) == []


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("\u200a\u2010\u2027\u2030\u205f\u2070", id="beside-the-ranges"),
        pytest.param("\U000dffff\U000e0080\U0001f389", id="beside-the-tags"),
        pytest.param("中文 עברית العربية", id="other-scripts"),
    ],
)
def test_characters_beside_the_unsafe_ranges_are_kept(text: str) -> None:
    assert escape(text) == text
    assert unsafe_characters(text) == []


def test_unsafe_characters_names_each_once_escaped() -> None:
    assert unsafe_characters("x\x1by\x1b\u202e") == ["\\u202e", "\\x1b"]
    assert unsafe_characters("a\u200bb\u2028\U000e0041") == ["\\U000e0041", "\\u200b", "\\u2028"]


def test_clip_escapes_then_bounds_the_length() -> None:
    assert clip("\x1b" * 100, limit=10) == "\\x1b\\x1b\\…"
