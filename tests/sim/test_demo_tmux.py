"""The interactive demo in a real terminal: tmux (from Debian) runs it in a 120 x 40 pane, and
`capture-pane` reads the screen as a person sees it, redraw after redraw.

Skipped with the reason when tmux is missing; with REQUIRE_REAL=1 (CI) that fails instead.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SESSION = "demo"
SPEED = "900"  # 15 simulated minutes a second: the 110-minute story takes about 7 s (and the CLI's)
DEADLINE_S = 30.0
EXITED = "the demo exited with status"

pytestmark = pytest.mark.slow


def require_tmux() -> str:
    found = shutil.which("tmux")
    if found is None:
        reason = "tmux is not installed (apt-get install tmux): the demo's screen test needs it"
        if os.environ.get("REQUIRE_REAL") == "1":
            pytest.fail(f"REQUIRE_REAL=1 but {reason}")
        pytest.skip(reason)
    return found


@dataclass(frozen=True)
class Tmux:
    """A tmux server of the test's own (its own socket, no user configuration)."""

    binary: str
    socket: str

    def __call__(self, *args: str, check: bool = True) -> str:
        command = [self.binary, "-L", self.socket, "-f", os.devnull, *args]
        done = subprocess.run(command, check=check, capture_output=True, text=True, timeout=10)
        return done.stdout

    def screen(self) -> list[str]:
        """The pane's visible rows, as a screenshot would show them."""
        return self("capture-pane", "-p", "-t", SESSION).splitlines()

    def wait_for(self, seen: Callable[[list[str]], bool], what: str) -> list[str]:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            screen = self.screen()
            if seen(screen):
                return screen
            time.sleep(0.1)
        pytest.fail(f"never saw {what}; the screen was:\n" + "\n".join(self.screen()))


@pytest.fixture
def terminal() -> Iterator[Tmux]:
    tmux = Tmux(require_tmux(), socket=f"iga-demo-test-{uuid.uuid4().hex[:8]}")
    demo = [sys.executable, "-m", "autoscaler", "demo", "--speed", SPEED, "--serve"]
    # bash reports the status: tmux's own (#{pane_dead_status}) is sometimes never filled in,
    # when it misses the child's exit. bash lets Ctrl-C through and goes on after a child that
    # handled it and exited.
    shell = f'{shlex.join(demo)}; echo "{EXITED} $?"'
    tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", SESSION, "-c", str(REPO),
         shlex.join(["bash", "-c", shell]))  # fmt: skip  # each flag beside its value
    tmux("set-option", "-t", SESSION, "remain-on-exit", "on")
    try:
        yield tmux
    finally:
        tmux("kill-server", check=False)


def line_starting(screen: list[str], prefix: str) -> str:
    return next(line for line in screen if line.startswith(prefix))


def status_line(screen: list[str]) -> str:
    """The region's first line: the scenario's title and the simulated time."""
    return line_starting(screen, "Two RayClusters, one 2-GPU quota: [")


def screens_until_served(terminal: Tmux) -> list[list[str]]:
    """Every screen captured, a few times a second, until the demo serves on after its story."""
    screens: list[list[str]] = []
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        screens.append(terminal.screen())
        if "serving until Ctrl-C" in "\n".join(screens[-1]):
            return screens
        time.sleep(0.1)
    pytest.fail("never saw the demo serving on; the screen was:\n" + "\n".join(screens[-1]))


def happening(screens: list[list[str]], text: str) -> str:
    """The first happening line on any screen that holds `text` after its time stamp."""
    found = (row for screen in screens for row in screen if row.startswith("[") and text in row)
    line = next(found, None)
    assert line is not None, f"{text!r} was never on screen"
    return line


def test_the_rest_url_and_the_token_stay_on_screen_while_the_table_is_redrawn(
    terminal: Tmux,
) -> None:
    first = terminal.wait_for(
        lambda rows: any(row.startswith("first-raycluster ") for row in rows), "the table"
    )
    rest, token = line_starting(first, "REST: http://127.0.0.1:"), line_starting(first, "token: ")
    grpc = line_starting(first, "gRPC: 127.0.0.1:")
    screens = screens_until_served(terminal)
    served = screens[-1]

    for screen in screens:
        assert screen[0].startswith("idle-gpu-autoscaler demo: two-clusters"), screen
        assert rest in screen and grpc in screen and token in screen, screen
    story = [screen for screen in screens if not any("Summary of" in row for row in screen)]
    assert len({status_line(screen) for screen in story}) >= 5  # redrawn under the same header
    assert served[0].startswith("idle-gpu-autoscaler demo: two-clusters")
    assert rest in served and token in served
    assert any(row.startswith("Summary of two-clusters") for row in served)
    assert any(row.startswith("try the API:") for row in served)


def test_the_warning_the_cli_snooze_and_the_snoozed_state_are_on_screen(terminal: Tmux) -> None:
    screens = screens_until_served(terminal)
    rows = [row for screen in screens for row in screen]

    warned = happening(screens, "warned first-raycluster: stop planned at 11:20")
    assert warned.startswith("[11:05 +65m] warned first-raycluster: stop planned at 11:20")
    command = happening(screens, " -m autoscaler snooze demo/first-raycluster 30m --reason")
    assert command.startswith("[11:05 +65m] $ ")
    assert happening(screens, "kept until 2026-03-02T11:35:00Z").startswith("[11:05 +65m]   demo/")
    assert any(
        row.startswith("first-raycluster ") and row.endswith("snoozed until 11:35 by demo-admin")
        for row in rows
    )
    stopped = happening(screens, "deactivated first-raycluster:")
    assert stopped.startswith("[11:35 +95m] deactivated first-raycluster:")
    assert happening(screens, "Kueue admitted second-raycluster").startswith("[11:35 +95m]")


def test_ctrl_c_ends_the_serving_demo_with_status_130(terminal: Tmux) -> None:
    terminal.wait_for(lambda rows: "serving until Ctrl-C" in "\n".join(rows), "the demo serving")

    terminal("send-keys", "-t", SESSION, "C-c")
    screen = terminal.wait_for(lambda rows: any(EXITED in row for row in rows), "the demo exit")

    (exited,) = [row for row in screen if EXITED in row]  # after the echoed ^C
    assert exited.endswith(f"{EXITED} 130")
    assert not any("Traceback" in row for row in screen)
