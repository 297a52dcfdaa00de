"""The suite's guard against CPython gh-106905 (see tests/support/ast_parse_guard.py): a parse
interrupted by a collection that lets another thread parse still builds its tree."""

from __future__ import annotations

import ast
import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.ast_parse_guard import shares_the_recursion_counter


@pytest.fixture
def a_thread_parsing_during_every_collection() -> Iterator[None]:
    """At every collection the main thread starts, another thread parses (as a server thread
    formatting a logged traceback would) while the main thread waits on it, GIL released."""
    go, done, stop = threading.Event(), threading.Event(), threading.Event()

    def other() -> None:
        while go.wait() and not stop.is_set():
            go.clear()
            ast.parse("client.get(path)")
            done.set()

    def during_collection(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and threading.current_thread() is threading.main_thread():
            done.clear()
            go.set()
            done.wait(0.2)

    thread = threading.Thread(target=other, daemon=True)
    thread.start()
    thresholds = gc.get_threshold()
    gc.callbacks.append(during_collection)
    gc.set_threshold(1)  # a collection at nearly every node the AST constructor allocates
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(during_collection)
        stop.set()
        go.set()
        thread.join(timeout=5)


def nested(depth: int, source: str) -> ast.Module:
    """Parse from `depth` frames down, as Hypothesis does from deep inside a test."""
    return nested(depth - 1, source) if depth else ast.parse(source)


def test_a_parse_a_collection_interrupts_for_another_threads_parse_still_succeeds(
    a_thread_parsing_during_every_collection: None,
) -> None:
    tree = nested(60, "f(lambda x: x > 0)\n" * 20)
    assert len(tree.body) == 20


def test_the_guard_is_needed_up_to_the_releases_that_fixed_the_interpreter() -> None:
    assert shares_the_recursion_counter((3, 11, 7))
    assert not shares_the_recursion_counter((3, 11, 8))
    assert shares_the_recursion_counter((3, 12, 1))
    assert not shares_the_recursion_counter((3, 12, 2))
    assert not shares_the_recursion_counter((3, 13, 0))
