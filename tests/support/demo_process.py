"""The demo as a person starts it, in its own process at max speed, kept serving its REST API
for a while after the story: a real service to point the CLI at, with its per-run token."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

DEADLINE_S = 30.0  # for every wait: a hung demo fails the test, it never hangs it
SERVING = "serving for"  # printed when the story and its summary are over


@dataclass(frozen=True)
class ServingDemo:
    rest: str  # http://127.0.0.1:PORT
    token: str  # the run's admin token


def _drain(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def _values_until_serving(lines: queue.Queue[str | None]) -> dict[str, str]:
    """`REST: ...` and `token: ...` as printed, read until the API serves the story's end."""
    deadline = time.monotonic() + DEADLINE_S
    values: dict[str, str] = {}
    printed: list[str] = []
    while True:
        line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        assert line is not None, "the demo ended early:\n" + "".join(printed)
        printed.append(line)
        label, _, value = line.rstrip("\n").partition(": ")
        if label in {"REST", "token"} and value:
            values[label] = value
        if line.startswith(SERVING):
            return values


@contextmanager
def serving_demo(*, serve_seconds: int) -> Iterator[ServingDemo]:
    """The demo after its story, serving for up to `serve_seconds`; stopped on exit."""
    command = [sys.executable, "-m", "autoscaler", "demo", "--speed", "max"]
    command += ["--non-interactive", "--duration", str(serve_seconds)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_drain, args=(process.stdout, lines), daemon=True)
    reader.start()
    try:
        values = _values_until_serving(lines)
        yield ServingDemo(rest=values["REST"], token=values["token"])
    finally:
        process.terminate()
        try:
            process.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=DEADLINE_S)
        process.stdout.close()
