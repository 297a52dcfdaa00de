"""The demo's fixed header: the story, the policy, where the REST API and the KEDA scaler
listen with the token, and two commands to try them, ready to paste into a second terminal.

The commands name this installation as it can be run from the current directory (the console
script when it is on PATH or in the interpreter's folder, else `python -m autoscaler`), so a
person who started `.venv/bin/idle-gpu-autoscaler demo` gets `.venv/bin/...` commands back.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autoscaler.demo.endpoints import Endpoints
from autoscaler.demo.story import World
from autoscaler.domain.durations import format_duration

SCRIPT = "idle-gpu-autoscaler"


@dataclass(frozen=True)
class Commands:
    """How this installation is run from the current directory."""

    cli: str  # "idle-gpu-autoscaler", ".venv/bin/idle-gpu-autoscaler", or "python -m autoscaler"
    python: str  # an interpreter that imports autoscaler and grpc

    @classmethod
    def here(
        cls,
        *,
        executable: str = sys.executable,
        cwd: Path | None = None,
        which: Callable[[str], str | None] = shutil.which,
    ) -> Commands:
        python = Path(executable)
        script = python.parent / SCRIPT
        found = which(SCRIPT)
        if found is not None and Path(found) == script:
            cli = SCRIPT  # the virtual environment is active
        elif script.exists():
            cli = _shown(script, cwd or Path.cwd())
        else:
            cli = f"{_shown(python, cwd or Path.cwd())} -m autoscaler"
        return cls(cli=cli, python=_shown(python, cwd or Path.cwd()))


def header_lines(world: World, endpoints: Endpoints | None, *, commands: Commands) -> list[str]:
    """What stays at the top of the screen for the whole demo."""
    lines = _story(world)
    if endpoints is not None:
        lines += [
            f"REST: {endpoints.rest_url}",
            f"gRPC: {endpoints.grpc_address}",
            f"token: {endpoints.token}",
            *try_lines(world, endpoints, commands=commands),
        ]
    return [*lines, ""]


def try_lines(world: World, endpoints: Endpoints, *, commands: Commands) -> list[str]:
    """A CLI call with the URL and token, and a KEDA-style IsActive request through the
    repository's own gRPC stubs, both about the story's first RayCluster."""
    first = min(world.scenario.arrivals, key=lambda arrival: arrival.minute).spec
    address = endpoints.grpc_address
    metadata = json.dumps({"workload": first.workload_name})  # KEDA adds its own keys
    ref = f"namespace={json.dumps(first.namespace)}, scalerMetadata={metadata}"
    is_active = (  # double quotes only: the shell gets it in single quotes
        "import grpc; from autoscaler.keda import externalscaler_pb2 as pb, "
        "externalscaler_pb2_grpc as rpc; "
        f"scaler = rpc.ExternalScalerStub(grpc.insecure_channel({json.dumps(address)})); "
        f"print(scaler.IsActive(pb.ScaledObjectRef({ref})).result)"
    )
    cli = (  # --token=: a token may start with "-"
        f"{commands.cli} status -n {shlex.quote(first.namespace)} "
        f"--server {endpoints.rest_url} --token={shlex.quote(endpoints.token)}"
    )
    return [
        f"try the API:  {cli}",
        f"try KEDA:     {commands.python} -c '{is_active}'",
        *([f"keep page:    {endpoints.keep_url}"] if endpoints.keep_url else []),
    ]


def _story(world: World) -> list[str]:
    scenario, policy, speed = world.scenario, world.settings.policy, world.clock.speed
    return [
        f"idle-gpu-autoscaler demo: {scenario.name} ({scenario.title})",
        f"policy: every GPU at or below {policy.threshold_percent:g}% for "
        f"{format_duration(policy.idle_window)}, grace {format_duration(policy.grace_period)}, "
        f"coverage at least {policy.min_coverage:.0%}; acting (the summary replays it in dry-run)",
        "speed: as fast as possible"
        if speed is None
        else f"speed: {speed:g} simulated seconds per second",
    ]


def _shown(path: Path, cwd: Path) -> str:
    """`path` relative to `cwd` when it lies under it, else as it is."""
    relative = os.path.relpath(path, cwd)
    return shlex.quote(str(path) if relative.startswith("..") else relative)
