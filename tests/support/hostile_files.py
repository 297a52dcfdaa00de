"""Settings files a person or a mistake could hand `check-config`, each with the problem its
one-line refusal names; shared by the tests and the benchmark that times their refusal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from autoscaler.core.documents import MAX_BYTES, MAX_DEPTH, MAX_VALUES


def billion_laughs(padding: int) -> str:
    """Nine aliases of nine aliases ... nine deep: 9**9 strings from a few hundred bytes, after
    a comment that brings the file near the size limit."""
    lines = [f"# {'x' * padding}", "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for name, previous in zip("bcdefghi", "abcdefgh", strict=True):
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    return "\n".join([*lines, "rules: *i", ""])


HOSTILE: dict[str, tuple[Callable[[], bytes], str]] = {
    "utf-16-with-bom": (
        lambda: "policy:\n  dryRun: true\n".encode("utf-16"),
        "UTF-16 text, not UTF-8 — save it as UTF-8",
    ),
    "utf-16-without-bom": (
        lambda: "policy:\n  dryRun: true\n".encode("utf-16-le"),
        "UTF-16 text, not UTF-8 — save it as UTF-8",
    ),
    "binary": (lambda: bytes(range(256)) * 8, "not UTF-8 text (byte 0x80 at offset 128: binary?)"),
    "nul-bytes": (lambda: b"policy:\x00\n", "not text: it holds NUL bytes"),
    "deeply-nested-flow": (
        ("policy: " + "[" * 5000 + "]" * 5000).encode,
        f"nested deeper than {MAX_DEPTH} levels",
    ),
    "deeply-nested-block": (
        lambda: "".join("  " * level + "-\n" for level in range(200)).encode(),
        f"nested deeper than {MAX_DEPTH} levels",
    ),
    "a-50-mb-list": (
        lambda: b"rules:\n" + b"- x\n" * (50 * 1024 * 1024 // 4),
        f"{7 + 50 * 1024 * 1024} bytes, over the limit of {MAX_BYTES} bytes",
    ),
    "a-list-just-under-the-size-limit": (
        lambda: b"rules:\n" + b"- 1\n" * ((MAX_BYTES - 8) // 4),
        f"more than {MAX_VALUES} values",
    ),
    "billion-laughs-under-the-size-limit": (
        lambda: billion_laughs(padding=MAX_BYTES - 2000).encode(),
        f"more than {MAX_VALUES} values, each alias counted as all it names",
    ),
    "an-alias-inside-itself": (lambda: b"rules: &r [*r]\n", "holds it (endless)"),
    "a-number-of-5000-digits": (
        lambda: b"loop: {interval: " + b"9" * 5000 + b"}\n",
        "cannot be one: Exceeds the limit (4300 digits)",
    ),
    "two-documents": (lambda: b"policy: {}\n---\nloop: {}\n", "not valid YAML at line 2"),
}

# What reading the counter itself adds to it: its own text, a few hundred bytes at most.
COUNTER_READ = 4096


def bytes_read_by_this_thread() -> int:
    """Bytes this thread has read by `read` calls so far, files and devices alike (Linux:
    `rchar` of /proc/thread-self/io), so other threads' reads do not blur the count."""
    for line in Path("/proc/thread-self/io").read_text(encoding="ascii").splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise RuntimeError("no rchar in /proc/thread-self/io")
