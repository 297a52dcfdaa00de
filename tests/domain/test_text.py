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
    ],
)
def test_escape_spells_out_control_and_bidi_characters(text: str, shown: str) -> None:
    assert escape(text) == shown
    assert unsafe_characters(escape(text)) == []


def test_unsafe_characters_names_each_once_escaped() -> None:
    assert unsafe_characters("x\x1by\x1b\u202e") == ["\\u202e", "\\x1b"]


def test_clip_escapes_then_bounds_the_length() -> None:
    assert clip("\x1b" * 100, limit=10) == "\\x1b\\x1b\\…"
