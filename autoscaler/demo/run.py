"""`idle-gpu-autoscaler demo`: the real service on an in-process cluster, exporter and clock.

The story plays once acting (the live view), then once more in dry-run at full speed, silently,
so the summary can say what acting changed. The composition root passes `build_service` and,
optionally, `configure` (adjusts the scenario's settings before the service is built: ports,
tokens, KEDA; the policy stays the scenario's) and `extra_servers`: a context manager factory
that starts the REST API and the KEDA gRPC endpoint on the live world's snapshot store and
cluster, and yields their `Endpoints`; and `keep_link`, which adds, once the story is over,
the Keep link the last warning of its first warned RayCluster carried (a link answers one
warning). After the story and
its summary the demo prints them with commands to try them, and serves on for `--duration`
seconds, or until Ctrl-C with `--serve`.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TextIO

from autoscaler.demo.endpoints import Endpoints
from autoscaler.demo.header import Commands, endpoint_lines, header_of, serve_hint
from autoscaler.demo.people import People
from autoscaler.demo.scenarios import DEFAULT_SCENARIO, SCENARIOS
from autoscaler.demo.screen import LiveTable
from autoscaler.demo.story import BuildService, Configure, Outcome, World, keep_serving, play
from autoscaler.demo.summary import Summary, render, summarize
from autoscaler.demo.view import PlainLines, View
from autoscaler.sim.clock import DEFAULT_SPEED, parse_speed

EXIT_INTERRUPTED = 130
ExtraServers = Callable[[World], AbstractContextManager[Endpoints | None]]
KeepLink = Callable[[World, Outcome, Endpoints], Endpoints]


@dataclass(frozen=True)
class DemoOptions:
    scenario: str = DEFAULT_SCENARIO
    speed: float | None = DEFAULT_SPEED  # None: as fast as possible
    duration: float = 0.0  # wall seconds to keep serving after the story; math.inf: --serve
    interactive: bool = True

    @property
    def serves_on(self) -> str | None:
        """The line that says the demo serves on after the story, if it does."""
        if math.isinf(self.duration):
            return "serving until Ctrl-C: the REST API and the KEDA scaler stay up"
        if self.duration > 0:
            return f"serving for {self.duration:g} more seconds (Ctrl-C stops)"
        return None


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario",
        choices=sorted(SCENARIOS),
        default=DEFAULT_SCENARIO,
        help=f"the story to play (default: {DEFAULT_SCENARIO})",
    )
    parser.add_argument(
        "--speed",
        type=_speed,
        default=DEFAULT_SPEED,
        metavar="N|max",
        help=f"simulated seconds per wall second (default {DEFAULT_SPEED:g}: a simulated "
        "minute per second); max jumps the clock without sleeping",
    )
    after = parser.add_mutually_exclusive_group()
    after.add_argument(
        "--duration",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="keep serving this many wall seconds after the story ends, to try the API",
    )
    after.add_argument(
        "--serve",
        action="store_true",
        help="keep the REST API and the KEDA scaler up after the story until Ctrl-C",
    )
    parser.add_argument(
        "--non-interactive",
        action="store_true",
        help="plain lines instead of a redrawn table (for CI logs)",
    )


def options_from(args: argparse.Namespace) -> DemoOptions:
    return DemoOptions(
        scenario=args.scenario,
        speed=args.speed,
        duration=math.inf if args.serve else max(0.0, args.duration),
        interactive=not args.non_interactive,
    )


def run_demo(
    args: argparse.Namespace,
    *,
    build_service: BuildService,
    extra_servers: ExtraServers | None = None,
    configure: Configure | None = None,
    keep_link: KeepLink | None = None,
    out: TextIO | None = None,
) -> int:
    """Play the scenario, print the summary, serve on for `--duration` (or until Ctrl-C with
    `--serve`); 0 when it ran, 130 when interrupted (Ctrl-C), after the extra servers have
    stopped."""
    options = options_from(args)
    try:
        play_demo(
            options,
            build_service=build_service,
            extra_servers=extra_servers,
            configure=configure,
            keep_link=keep_link,
            out=out,
        )
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return 0


@dataclass(frozen=True)
class DemoRun:
    live: Outcome
    replay: Outcome  # the same story in dry-run
    summary: Summary


def play_demo(
    options: DemoOptions,
    *,
    build_service: BuildService,
    extra_servers: ExtraServers | None = None,
    configure: Configure | None = None,
    keep_link: KeepLink | None = None,
    out: TextIO | None = None,
) -> DemoRun:
    stream = out or sys.stdout
    scenario = SCENARIOS[options.scenario]
    logger = quiet_logger()
    world = World.build(
        scenario,
        dry_run=False,
        speed=options.speed,
        build_service=build_service,
        logger=logger,
        configure=configure,
    )
    view = _view(stream, interactive=options.interactive)
    servers = extra_servers(world) if extra_servers is not None else nullcontext(None)
    commands = Commands.here()
    with servers as served:
        endpoints = served
        view.start(header_of(world))
        people = People(scenario.people, endpoints=endpoints, shown_python=commands.python)
        live = play(world, on_cycle=view.show, people=people)
        replay_world = World.build(
            scenario,
            dry_run=True,
            speed=None,
            build_service=build_service,
            logger=logger,
            configure=configure,
        )
        replay = play(replay_world)
        summary = summarize(live, replay)
        serves_on = options.serves_on
        if endpoints is not None and keep_link is not None:
            endpoints = keep_link(world, live, endpoints)
        view.conclude(
            render(summary),
            then=_after_the_summary(
                world, endpoints=endpoints, serves_on=serves_on, commands=commands
            ),
        )
        if serves_on:
            keep_serving(world, wall_seconds=options.duration, on_cycle=view.show)
    return DemoRun(live, replay, summary)


def _after_the_summary(
    world: World, *, endpoints: Endpoints | None, serves_on: str | None, commands: Commands
) -> list[str]:
    """Where the API listens and the commands to try it, while the demo serves on; else how
    to make it serve on (the servers stop with the story: a pasted command would fail)."""
    if endpoints is None:
        return [serves_on] if serves_on else []
    if serves_on is None:
        return serve_hint(world, commands=commands)
    return [*endpoint_lines(world, endpoints, commands=commands), "", serves_on]


def _view(stream: TextIO, *, interactive: bool) -> View:
    if interactive and stream.isatty():
        return LiveTable(stream)
    return PlainLines(stream)


def quiet_logger() -> logging.Logger:
    """The service logs every decision; the view already shows them, so keep them off stdout."""
    logger = logging.getLogger("idle-gpu-autoscaler.demo")
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return logger


def _speed(text: str) -> float | None:
    try:
        return parse_speed(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
