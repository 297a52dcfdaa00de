"""A demo world played by the real service, and the real REST app over it on a loopback
port: what the sim tests that reach the demo through HTTP share."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from autoscaler.compose.api import build_api_on
from autoscaler.compose.demo import build_demo_service, simulated_backends
from autoscaler.compose.service import Service
from autoscaler.demo.scenarios import Scenario
from autoscaler.demo.story import World

TOKEN = "a-demo-token-of-some-length"


def acting_world(scenario: Scenario, *, logger: logging.Logger) -> World:
    """The scenario's world, dry-run off, its clock moved by the test (no speed)."""
    return World.build(
        scenario, dry_run=False, speed=None, build_service=build_demo_service, logger=logger
    )


@contextmanager
def world_api(world: World, *, logger: logging.Logger) -> Iterator[httpx.Client]:
    """The real REST app over the world's service and backends; TOKEN is accepted."""
    service = world.service
    assert isinstance(service, Service)
    backends = simulated_backends(
        world.cluster,
        clock=world.clock,
        settings=world.settings,
        token=TOKEN,
        shared=service.shared,
    )
    built = build_api_on(
        world.settings.api.model_copy(update={"host": "127.0.0.1", "port": 0}),
        backends=backends,
        store=service.store,
        telemetry=service.telemetry,
        clock=world.clock,
        logger=logger,
    )
    built.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{built.server.port}", timeout=5) as client:
            yield client
    finally:
        built.stop()
