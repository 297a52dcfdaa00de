"""The demo played in the test's own process as `idle-gpu-autoscaler demo` plays it: with the
composition root's REST API and KEDA scaler on loopback, so the story's people can run the
CLI against it."""

from __future__ import annotations

from typing import TextIO

from autoscaler.compose.demo import demo_parts
from autoscaler.demo.run import DemoOptions, DemoRun, play_demo


def play_served(options: DemoOptions, *, out: TextIO) -> DemoRun:
    parts = demo_parts()
    return play_demo(
        options,
        build_service=parts.build_service,
        configure=parts.configure,
        extra_servers=parts.extra_servers,
        out=out,
    )
