"""One `ast.parse` at a time in the test process, on a Python whose AST constructor shares its
recursion counter between threads.

Up to 3.11.7 (and 3.12.1), `PyAST_mod2obj` keeps its recursion depth in the interpreter's one
`ast_state`: a collection inside it can run a finalizer that hands the GIL to another thread,
whose own `ast.parse` overwrites that depth, and the first parse then fails with
`SystemError: AST constructor recursion depth mismatch (before=…, after=…)`. Fixed upstream by a
counter per call: https://github.com/python/cpython/issues/106905 (the 3.11 backport,
https://github.com/python/cpython/pull/113476, is in 3.11.8; the 3.12 one in 3.12.2).

The suite meets it when Hypothesis describes a filter's lambda (it parses the lambda's source,
as schemathesis' fuzzing does on every operation) while another thread parses too: 3.11's
tracebacks parse the failing line to place their carets, so any thread formatting a logged
exception (a rig's server, the service's loop) is enough. A lock around `ast.parse` makes the
second thread wait for the first; it is re-entrant, so a finalizer that parses on the same
thread does not deadlock.
"""

from __future__ import annotations

import ast
import sys
import threading
from typing import Any

FIXED_IN = {(3, 11): (3, 11, 8), (3, 12): (3, 12, 2)}  # 3.13 was released with the fix


def shares_the_recursion_counter(version: tuple[int, int, int]) -> bool:
    fixed = FIXED_IN.get(version[:2])
    return fixed is not None and version < fixed


def install() -> None:
    """Serialise `ast.parse` across threads where the interpreter needs it; idempotent."""
    version = (sys.version_info.major, sys.version_info.minor, sys.version_info.micro)
    if not shares_the_recursion_counter(version) or hasattr(ast.parse, "serialised_parse"):
        return
    lock = threading.RLock()
    unguarded = ast.parse

    def parse(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return unguarded(*args, **kwargs)

    parse.serialised_parse = True  # type: ignore[attr-defined]
    ast.parse = parse  # type: ignore[assignment]
