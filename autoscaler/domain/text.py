"""Text that came from people: what a name may be, and what may reach a terminal.

Free text (a reason, a name shown to an admin) can come through the API, where the boundary
refuses the characters below, or through an annotation set with kubectl, which nobody checks.
So every renderer (the CLI, log lines, Events) passes what it prints through `escape`: an ESC,
a CR or a U+202E is shown as `\\x1b`, `\\x0d`, `\\u202e`, never obeyed by the terminal that
shows it, and a character nobody can see (a zero-width space, a tag character) is shown
rather than hidden.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# DNS-1123 label (namespaces) and subdomain (object names), as the API server checks them.
LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"

# The characters `escape` spells out, by what they do, as the inside of a pattern's class
# written in escapes Python's `re` and the API schema's regex engine both read; the API's
# schema refuses them with the same class.
UNSAFE_CHARACTERS = (
    r"\x00-\x1f\x7f-\x9f"  # control characters: C0, DEL, C1 (NEL, U+0085, among them)
    r"\u2028\u2029"  # line and paragraph separators: a line break to many terminals and editors
    r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides, isolates
    r"\u200b-\u200d\u2060\ufeff"  # zero-width space, non-joiner, joiner, word joiner, BOM
    r"\U000e0000-\U000e007f"  # tag characters: invisible, may smuggle text past a reader
)
_UNSAFE = re.compile(f"[{UNSAFE_CHARACTERS}]")


def unsafe_characters(text: str) -> list[str]:
    """The characters of `text` that `escape` spells out (control, line separator, bidi,
    zero-width and tag characters), each once, escaped."""
    return sorted({escape(match) for match in _UNSAFE.findall(text)})


def escape(text: str) -> str:
    """`text` with every unsafe character spelled out, safe to print on a terminal."""
    return _UNSAFE.sub(_spelled, text)


SHOWN_PROBLEMS = 5  # an error names at most this many keys or fields: its size stays bounded


def some(names: Sequence[str]) -> str:
    """The first SHOWN_PROBLEMS of `names`, clipped, and how many more there are."""
    shown = ", ".join(clip(name) for name in names[:SHOWN_PROBLEMS])
    more = len(names) - SHOWN_PROBLEMS
    return f"{shown} and {more} more" if more > 0 else shown


def counted(number: int, noun: str) -> str:
    """ "1 stop", "2 stops": a count with its noun, plural by an "s"."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def clip(text: str, limit: int = 64) -> str:
    """Escaped and at most `limit` characters (with an ellipsis), for error texts."""
    safe = escape(text)
    return safe if len(safe) <= limit else safe[: limit - 1] + "…"


def _spelled(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"  # Python's own spelling
