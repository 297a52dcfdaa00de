"""The demo played in the test's own process: `played`, one story through at once, and
`play_served`, as `idle-gpu-autoscaler demo` plays it, with the composition root's REST API
and KEDA scaler on loopback, so the story's people can run the CLI against it. `stamp` is the
time a story prints before what happens at one of its minutes."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import TextIO

from autoscaler.compose.demo import build_demo_service, demo_parts
from autoscaler.demo.run import DemoOptions, DemoRun, play_demo
from autoscaler.demo.scenarios import SCENARIOS


def played(scenario: str) -> tuple[DemoRun, str]:
    """The story played through without pauses, and what it printed."""
    out = io.StringIO()
    options = DemoOptions(scenario=scenario, speed=None, interactive=False)
    return play_demo(options, build_service=build_demo_service, out=out), out.getvalue()


def stamp(scenario: str, minute: int) -> str:
    """ "[HH:MM +Nm]": the story's start plus `minute`, as it prints it."""
    return f"[{SCENARIOS[scenario].start + timedelta(minutes=minute):%H:%M} +{minute}m]"


def play_served(options: DemoOptions, *, out: TextIO) -> DemoRun:
    parts = demo_parts()
    return play_demo(
        options,
        build_service=parts.build_service,
        configure=parts.configure,
        extra_servers=parts.extra_servers,
        out=out,
    )
