"""The people in a story: scripted steps a person takes when the service tells them something.

A `SnoozeAtWarning` is someone who, warned that their RayCluster will be stopped, keeps it a
while longer from the command line. The story runs the real CLI as a child process
(`python -m autoscaler snooze NAMESPACE/NAME 30m --reason ...`) against the demo's own REST
API, with the URL and the token the header shows (in `IGA_URL` and `IGA_TOKEN`, as a person
would export them), and tells the command line and its answer in the view. The demo never
imports the client: the CLI is another surface, so it is run, not called.

A run that serves no API (a test building the world alone) says so where the step would be,
and the story goes on without it: the warned stop then comes on time.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from autoscaler.demo.endpoints import Endpoints
from autoscaler.domain.models import Action, Snapshot, WorkloadRef
from autoscaler.domain.outcomes import OutcomeKind

CLI_TIMEOUT_S = 60.0  # a CLI that hangs fails its step, never the story


@dataclass(frozen=True)
class SnoozeAtWarning:
    """When `raycluster` is first warned, a person runs `snooze` on it from the CLI."""

    raycluster: str
    duration: str  # as the CLI takes it: 30m, 1h30m
    reason: str


@dataclass(frozen=True)
class Ran:
    """How a child process ended."""

    code: int
    out: str
    err: str


Run = Callable[[Sequence[str], Mapping[str, str]], Ran]
NameOf = Callable[[WorkloadRef], str]


def run_child(argv: Sequence[str], environ: Mapping[str, str]) -> Ran:
    """The command as a child process with this environment; a timeout is a failure."""
    try:
        done = subprocess.run(
            list(argv),
            env=dict(environ),
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Ran(code=-1, out="", err=f"no answer within {CLI_TIMEOUT_S:g} s")
    return Ran(code=done.returncode, out=done.stdout, err=done.stderr)


class People:
    """The scenario's steps, each taken once, when its moment comes."""

    def __init__(
        self,
        steps: Sequence[SnoozeAtWarning],
        *,
        endpoints: Endpoints | None,
        python: str = sys.executable,
        shown_python: str = "python",
        run: Run = run_child,
    ) -> None:
        self._waiting = list(steps)
        self._endpoints = endpoints
        self._python = python
        self._shown = f"{shown_python} -m autoscaler"
        self._run = run

    def after(self, snapshot: Snapshot, *, name_of: NameOf) -> tuple[str, ...]:
        """The steps this cycle's snapshot calls for, taken; what they showed, in order."""
        lines: list[str] = []
        for step in list(self._waiting):
            ref = _warned(snapshot, step.raycluster, name_of=name_of)
            if ref is not None:
                self._waiting.remove(step)
                lines += self._snooze(step, ref)
        return tuple(lines)

    def _snooze(self, step: SnoozeAtWarning, ref: WorkloadRef) -> list[str]:
        arguments = ["snooze", f"{ref.namespace}/{step.raycluster}", step.duration]
        arguments += ["--reason", step.reason]
        shown = f"$ {self._shown} {shlex.join(arguments)}"
        if self._endpoints is None:
            return [f"{step.raycluster} is warned; no REST API in this run, nobody runs: {shown}"]
        said = (
            f"a person reads the warning and keeps {step.raycluster} from the CLI "
            "(IGA_URL and IGA_TOKEN: the demo's REST URL and token, which `demo --serve` prints):"
        )
        environ = {
            **os.environ,
            "IGA_URL": self._endpoints.rest_url,
            "IGA_TOKEN": self._endpoints.token,
        }
        ran = self._run([self._python, "-m", "autoscaler", *arguments], environ)
        return [said, shown, *_answer(ran)]


def _warned(snapshot: Snapshot, raycluster: str, *, name_of: NameOf) -> WorkloadRef | None:
    """The Workload of `raycluster` when this cycle warned it of a stop."""
    for record in snapshot.actions:
        warned = record.action is Action.WARN and record.outcome.kind is OutcomeKind.DONE
        if warned and name_of(record.workload) == raycluster:
            return record.workload
    return None


def _answer(ran: Ran) -> list[str]:
    """The CLI's output, indented under its command line; a failure with its last words."""
    if ran.code == 0:
        return [f"  {line}" for line in ran.out.splitlines() if line.strip()]
    last = (ran.err.strip().splitlines() or ["no message"])[-1]
    return [f"  the CLI failed (exit {ran.code}): {last}; the warned stop stands"]
