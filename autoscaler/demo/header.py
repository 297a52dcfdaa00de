"""The demo's fixed header (the story, the policy, what the service does in it), and what is
printed after the summary: while the demo serves on, where the REST API and the KEDA scaler
listen with the token, and commands to try them, ready to paste into a second terminal; else
the command that plays the story again with the servers kept up.

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
from autoscaler.demo.layout import Verbatim, wrap_all
from autoscaler.demo.scenarios import DEFAULT_SCENARIO
from autoscaler.demo.story import World
from autoscaler.domain.durations import format_duration
from autoscaler.domain.program import PROGRAM

SCRIPT = PROGRAM  # the console script


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


HEADER_ROWS = 3  # the most the header takes, at every terminal size


@dataclass(frozen=True)
class Header:
    """What stays at the top of the screen for the whole story: the story, the policy and
    what the service does in it, in at most `HEADER_ROWS` rows. The REST API's address, the
    token and the commands to try them come after the summary (`endpoint_lines`), printed
    whole so they can be pasted."""

    story: str  # "idle-gpu-autoscaler demo: two-clusters"
    title: str
    policy: str
    mode: str

    def shows_title(self, width: int) -> bool:
        """Whether the header fitted to `width` still names the story's title."""
        return self.title in " ".join(self.lines(width))

    def lines(self, width: int | None = None) -> list[str]:
        """The header in rows of at most `width` (None: one line each, for logs), words
        whole: the story's title is left to the status line when all would not fit."""
        full = [f"{self.story} ({self.title})", self.policy, self.mode]
        if width is None:
            return full
        shorter = [[self.story, self.policy, self.mode], [self.story, self.policy], [self.story]]
        for candidate in [full, *shorter]:
            rows = wrap_all(candidate, width)
            if len(rows) <= HEADER_ROWS:
                return rows
        return wrap_all([self.story], width)[:HEADER_ROWS]


def header_of(world: World) -> Header:
    scenario, policy = world.scenario, world.settings.policy
    return Header(
        story=f"{PROGRAM} demo: {scenario.name}",
        title=scenario.title,
        policy=f"policy: every GPU at or below {policy.threshold_percent:g}% for "
        f"{format_duration(policy.idle_window)}, grace {format_duration(policy.grace_period)}, "
        f"coverage at least {policy.min_coverage:.0%}",
        mode="dry-run: it says what it would do and stops nothing"
        if policy.dry_run
        else "acting: warns, then stops; the summary compares a replay that stops nothing",
    )


def endpoint_lines(world: World, endpoints: Endpoints, *, commands: Commands) -> list[str]:
    """Where the REST API and the KEDA scaler listen, the token, and the commands to try
    them (`try_lines`): printed after the summary while the demo serves on, each on one line
    however long, to paste."""
    lines = [
        f"REST: {endpoints.rest_url}",
        f"gRPC: {endpoints.grpc_address}",
        f"token: {endpoints.token}",
        *try_lines(world, endpoints, commands=commands),
    ]
    return [Verbatim(line) for line in lines]


def serve_hint(world: World, *, commands: Commands) -> list[str]:
    """After a story that does not serve on: the command that replays it with servers that
    stay up to try, on a line of its own to paste."""
    scenario = world.scenario.name
    again = f"{commands.cli} demo" + (
        "" if scenario == DEFAULT_SCENARIO else f" --scenario {scenario}"
    )
    return [
        "The REST API and KEDA scaler stopped with the story. To try them, run it again:",
        Verbatim(f"  {again} --serve"),
    ]


def try_lines(world: World, endpoints: Endpoints, *, commands: Commands) -> list[str]:
    """A CLI call with the URL and token, and a KEDA-style IsActive request through the
    repository's own gRPC stubs, both about the story's first RayCluster; and the Keep link,
    when the run has one."""
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


def _shown(path: Path, cwd: Path) -> str:
    """`path` relative to `cwd` when it lies under it, else as it is."""
    relative = os.path.relpath(path, cwd)
    return shlex.quote(str(path) if relative.startswith("..") else relative)
