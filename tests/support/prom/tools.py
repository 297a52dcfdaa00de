"""Small shared helpers: locating the Prometheus binaries, free ports, polling."""

from __future__ import annotations

import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from tests.support.real_parts import missing

T = TypeVar("T")

INSTALL_HINT = "prometheus not installed: apt-get install -y prometheus"


@dataclass(frozen=True)
class PrometheusBinaries:
    prometheus: Path
    promtool: Path


def find_binary(name: str) -> Path | None:
    """PATH first, then /usr/bin where Debian's package puts it."""
    found = shutil.which(name) or shutil.which(name, path="/usr/bin")
    return Path(found) if found else None


def require_binaries(find: Callable[[str], Path | None] = find_binary) -> PrometheusBinaries:
    """The real binaries, or skip the test (fail it when REQUIRE_REAL=1)."""
    prometheus, promtool = find("prometheus"), find("promtool")
    if prometheus is None or promtool is None:
        missing(INSTALL_HINT)
    return PrometheusBinaries(prometheus=prometheus, promtool=promtool)


def free_port() -> int:
    """A loopback port free right now (the caller retries if someone takes it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(
    probe: Callable[[], T | None],
    *,
    timeout_s: float = 10.0,
    interval_s: float = 0.05,
    what: str = "condition",
) -> T:
    """Poll `probe` until it returns something truthy (a non-empty query result, True) and return
    it; raise TimeoutError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(interval_s)
