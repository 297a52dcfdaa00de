"""Where the demo serves: loopback only, free ports, and every server stopped on the way out.

The composition root (`autoscaler.compose.demo.demo`) builds the REST API and the KEDA scaler; these
helpers pick their addresses and run them for the story and the `--duration` phase.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Protocol

from autoscaler.settings.tree import Settings

LOOPBACK = "127.0.0.1"  # a demo is for the person at this machine, never the network


class Startable(Protocol):
    def start(self) -> object: ...

    def stop(self) -> None: ...


def free_port(host: str = LOOPBACK) -> int:
    """A port nobody listens on now. The gRPC server binds it at start; the window in
    between is a race that a demo on a workstation can afford (KEDA's port must be >= 1)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def serve_on_loopback(settings: Settings, *, keda_port: int, api_port: int = 0) -> Settings:
    """The scenario's settings with the KEDA scaler on and the API on loopback at `api_port`
    (0: the API server binds a free one at build time and reports the port it got; Keep
    links need the port before then, so the caller chooses it)."""
    keda = settings.keda.model_copy(update={"enabled": True, "port": keda_port})
    api = settings.api.model_copy(update={"host": LOOPBACK, "port": api_port})
    return settings.model_copy(update={"keda": keda, "api": api})


def sign_links(settings: Settings, *, base_url: str, key_file: Path) -> Settings:
    """Keep links on, as the chart turns them on: the address they point at and the file of
    the key that signs them (a mounted Secret there, a file of the run's own here)."""
    section = settings.notifications
    links = section.links.model_copy(update={"base_url": base_url, "signing_key_file": key_file})
    return settings.model_copy(
        update={"notifications": section.model_copy(update={"links": links})}
    )


@contextmanager
def running(servers: Iterable[Startable]) -> Iterator[None]:
    """Start in order; stop in reverse, including when a later one fails to start."""
    with ExitStack() as stack:
        for server in servers:
            server.start()
            stack.callback(server.stop)
        yield
