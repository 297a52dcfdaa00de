"""The demo played in the test's own process: `played`, one story through at once, and
`play_served`, as `idle-gpu-autoscaler demo` plays it, with the composition root's REST API
and KEDA scaler on loopback, so the story's people can run the CLI against it. `stamp` is the
time a story prints before what happens at one of its minutes."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TextIO

from autoscaler.compose.demo import build_demo_service, demo_parts
from autoscaler.demo.endpoints import Endpoints
from autoscaler.demo.run import DemoOptions, DemoRun, play_demo
from autoscaler.demo.scenarios import SCENARIOS
from autoscaler.demo.story import World


def played(scenario: str) -> tuple[DemoRun, str]:
    """The story played through without pauses, and what it printed."""
    out = io.StringIO()
    options = DemoOptions(scenario=scenario, speed=None, interactive=False)
    return play_demo(options, build_service=build_demo_service, out=out), out.getvalue()


def stamp(scenario: str, minute: int) -> str:
    """ "[HH:MM +Nm]": the story's start plus `minute`, as it prints it."""
    return f"[{SCENARIOS[scenario].start + timedelta(minutes=minute):%H:%M} +{minute}m]"


def play_served(
    options: DemoOptions, *, out: TextIO, at_the_end: Callable[[Endpoints], None] | None = None
) -> DemoRun:
    """`at_the_end`, if given, is called with the served endpoints once the story is over,
    before they stop serving."""
    parts = demo_parts()

    @contextmanager
    def servers(world: World) -> Iterator[Endpoints | None]:
        with parts.extra_servers(world) as endpoints:
            yield endpoints
            if at_the_end is not None:
                assert endpoints is not None
                at_the_end(endpoints)

    return play_demo(
        options,
        build_service=parts.build_service,
        configure=parts.configure,
        extra_servers=servers,
        out=out,
    )
