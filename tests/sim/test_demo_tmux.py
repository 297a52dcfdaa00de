"""The interactive demo in a real terminal: tmux (from Debian) runs the real
`idle-gpu-autoscaler demo` command at 80 x 24 and 120 x 40, and `capture-pane` reads the
screen as a person sees it, redraw after redraw.

All runs start at once, each in its own tmux session, so the module costs about one story's
time: two-clusters at both sizes (and serving on at 120 x 40), many-kinds (other owner kinds,
a title too long for an 80-column header) at 80 x 24, at 900 simulated seconds a second: 7 s
of story each, and 5 s of CPU. What the
screens show is checked against the same stories printed as plain lines (`--non-interactive`,
one line per happening, nothing fitted to a width): every word on a screen must be a word of
that text, so a word the view cut (`deactiva`) fails, whatever the story says.

Skipped with the reason when tmux is missing; with REQUIRE_REAL=1 (CI) that fails instead.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from autoscaler.demo.header import HEADER_ROWS
from autoscaler.demo.layout import rows_taken
from autoscaler.demo.run import DemoOptions
from tests.support.real_parts import missing

REPO = Path(__file__).resolve().parents[2]
SPEED = "900"  # 15 simulated minutes a second: a 2-hour story plays in about 8 s
DEADLINE_S = 90.0  # for a whole run, on a loaded machine
EXITED = "the demo exited with status"
SERVING = "serving until Ctrl-C"
SERVES_ON = DemoOptions(duration=math.inf).serves_on or ""
PASTED = ("REST: ", "gRPC: ", "token: ", "try ", "keep page: ")  # printed whole, to paste
LIVE_ONLY = {"simulated,", f"{SPEED}x", "…", *EXITED.split()}  # the status line, a head, bash
TMUX = ("Pane is dead",)  # tmux's own line under a pane whose command ended
NUMERIC = re.compile(r"[\[(]?[-+\d:./%]+[\])%,;:m]*")  # times and figures a redraw shows first

pytestmark = pytest.mark.slow


def require_tmux() -> str:
    found = shutil.which("tmux")
    if found is None:
        missing("tmux is not installed (apt-get install tmux): the demo's screen test needs it")
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

    def screen(self, session: str, *, history: bool = False) -> list[str]:
        """The pane's rows as a screenshot shows them, a line the terminal wrapped joined
        again (-J: a pasted command is one row); with `history`, the scrollback above too."""
        more = ["-S", "-"] if history else []
        rows = self("capture-pane", "-p", "-J", *more, "-t", session).splitlines()
        return [row.rstrip() for row in rows]


@dataclass(frozen=True)
class Size:
    columns: int
    lines: int


@dataclass
class Run:
    """One demo run in a tmux session, and what its screens showed."""

    name: str
    scenario: str
    size: Size
    stopped: str  # the first column of a row the story stops
    serve: bool
    screens: list[list[str]] = field(default_factory=list)
    final: list[str] = field(default_factory=list)  # when it exited, or began to serve on
    history: list[str] = field(default_factory=list)  # the scrollback and the final screen
    exit_screen: list[str] = field(default_factory=list)  # after Ctrl-C, for a serving run
    plain: str = ""  # the same story as plain lines

    def done(self, screen: list[str]) -> bool:
        text = "\n".join(screen)
        return (SERVING in text) if self.serve else (EXITED in text)

    @property
    def story_screens(self) -> list[list[str]]:
        """The screens while the live view ran: a status line under the header, no summary."""
        return [
            screen
            for screen in self.screens
            if any(is_status(row) for row in screen) and not any("Summary of" in r for r in screen)
        ]

    @property
    def summary(self) -> list[str]:
        """The summary's lines as the plain text prints them."""
        lines = self.plain.splitlines()
        start = lines.index(next(line for line in lines if line.startswith("Summary of")))
        end = lines.index("", start)
        return lines[start:end]


RUNS = (
    Run("two-clusters-120x40-serve", "two-clusters", Size(120, 40), "first-raycluster", True),
    Run("two-clusters-80x24", "two-clusters", Size(80, 24), "first-raycluster", serve=False),
    Run("many-kinds-80x24", "many-kinds", Size(80, 24), "train-7", serve=False),
)


def demo_command(scenario: str, *more: str) -> list[str]:
    return [sys.executable, "-m", "autoscaler", "demo", "--scenario", scenario, *more]


@pytest.fixture(scope="module")
def runs() -> Iterator[dict[str, Run]]:
    """Every run in `RUNS` recorded, with the plain text of its story."""
    tmux = Tmux(require_tmux(), socket=f"iga-demo-test-{uuid.uuid4().hex[:8]}")
    plain = {
        scenario: subprocess.Popen(
            demo_command(scenario, "--speed", "max", "--non-interactive"),
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for scenario in {run.scenario for run in RUNS}
    }
    try:
        for run in RUNS:
            start(tmux, run)
        record(tmux, list(RUNS))
        for run in RUNS:
            run.plain = plain[run.scenario].communicate(timeout=DEADLINE_S)[0]
        for run in RUNS:
            if run.serve:
                tmux("send-keys", "-t", run.name, "C-c")
                run.exit_screen = wait_for(
                    tmux, run.name, lambda rows: any(EXITED in row for row in rows), "the exit"
                )
        yield {run.name: run for run in RUNS}
    finally:
        tmux("kill-server", check=False)
        for process in plain.values():
            process.kill()
            process.wait()


def start(tmux: Tmux, run: Run) -> None:
    demo = demo_command(run.scenario, "--speed", SPEED, *(["--serve"] if run.serve else []))
    # bash reports the status: tmux's own (#{pane_dead_status}) is sometimes never filled in,
    # when it misses the child's exit. bash lets Ctrl-C through and goes on after a child that
    # handled it and exited.
    shell = f'{shlex.join(demo)}; echo "{EXITED} $?"'
    columns, lines = str(run.size.columns), str(run.size.lines)
    tmux("new-session", "-d", "-x", columns, "-y", lines, "-s", run.name, "-c", str(REPO),
         shlex.join(["bash", "-c", shell]))  # fmt: skip  # each flag beside its value
    tmux("set-option", "-t", run.name, "remain-on-exit", "on")


def record(tmux: Tmux, waiting: list[Run]) -> None:
    """Every screen of every run, a few times a second, until each has exited or serves on."""
    deadline = time.monotonic() + DEADLINE_S
    while waiting and time.monotonic() < deadline:
        for run in list(waiting):
            screen = tmux.screen(run.name)
            if screen != tmux.screen(run.name):
                continue  # caught while a redraw was being written: a torn frame, not a screen
            run.screens.append(screen)
            if run.done(screen):
                run.final = screen
                run.history = tmux.screen(run.name, history=True)
                waiting.remove(run)
        time.sleep(0.1)
    for run in waiting:
        pytest.fail(f"{run.name} never ended; its screen was:\n" + "\n".join(run.screens[-1]))


def wait_for(tmux: Tmux, session: str, seen: Callable[[list[str]], bool], what: str) -> list[str]:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        screen = tmux.screen(session)
        if seen(screen):
            return screen
        time.sleep(0.1)
    pytest.fail(f"never saw {what}; the screen was:\n" + "\n".join(tmux.screen(session)))


def bare(word: str) -> str:
    """A word without the punctuation around it: "busy," in a live table's cell is the
    plain text's "busy" (which prints the table every ten minutes only)."""
    return word.strip(",;:()[]'`\"")


def is_status(row: str) -> bool:
    """The region's first line: the simulated time and the pace."""
    return re.match(rf"\[\d\d:\d\d \+\d+m\] simulated, {SPEED}x", row) is not None


def flat(rows: list[str]) -> str:
    """The words of `rows` in order, however they were wrapped."""
    return " ".join(" ".join(rows).split())


def happenings(screen: list[str]) -> list[str]:
    """The happenings on a screen, each joined from its stamped row and the rows indented
    under it."""
    found: list[str] = []
    joining = False
    for row in screen:
        if row.startswith("["):
            found.append(row)
            joining = True
        elif joining and row.startswith(" " * 12):  # under the text after "[10:00 +0m] "
            found[-1] = flat([found[-1], row])
        else:
            joining = False
    return found


def happening(screens: list[list[str]], text: str) -> str:
    """The first happening on any screen that holds `text`."""
    line = next((h for s in screens for h in happenings(s) if text in h), None)
    assert line is not None, f"{text!r} was never on screen"
    return line


PARAMETRIZED = pytest.mark.parametrize("name", [run.name for run in RUNS])


@PARAMETRIZED
def test_the_header_takes_at_most_three_rows_and_stays_while_the_table_is_redrawn(
    runs: dict[str, Run], name: str
) -> None:
    run = runs[name]
    story = run.story_screens

    assert len({next(row for row in screen if is_status(row)) for screen in story}) >= 5
    for screen in story:
        header = screen[: screen.index("")]
        assert 2 <= len(header) <= HEADER_ROWS, screen
        assert header[0].startswith(f"idle-gpu-autoscaler demo: {run.scenario}"), screen
        assert not any(row.startswith(PASTED) for row in header), screen


@PARAMETRIZED
def test_no_word_is_cut_and_no_line_is_wider_than_the_terminal(
    runs: dict[str, Run], name: str
) -> None:
    run = runs[name]
    words = {bare(w) for w in [*run.plain.split(), *LIVE_ONLY, *SERVES_ON.split()]}
    rows = [row for screen in [*run.screens, run.history] for row in screen]
    ours = [row for row in rows if not row.startswith((*PASTED, *TMUX))]

    cut = {w for row in ours for w in row.split() if bare(w) not in words}
    cut -= {w for w in cut if NUMERIC.fullmatch(w)}
    assert not cut, f"words not in the story's text (cut?): {sorted(cut)}"
    assert max(len(row) for row in ours) < run.size.columns
    states = [row for row in rows if row.startswith(f"{run.stopped} ")]
    assert any(row.endswith(" deactivated") for row in states)  # the STATE the issue saw cut


@PARAMETRIZED
def test_the_event_log_fills_the_rows_under_the_table(runs: dict[str, Run], name: str) -> None:
    run = runs[name]
    first = next(line for line in run.plain.splitlines() if line.startswith("[")).split("] ")[1]

    for screen in run.story_screens:
        empty_below = len(screen) - len("\n".join(screen).rstrip("\n").splitlines())
        if empty_below > 2:  # the last row stays free; one more may not hold a row of words
            assert first in flat(screen), f"rows left empty while happenings hide:\n{screen}"


@PARAMETRIZED
def test_the_whole_summary_is_left_on_screen_or_in_the_scrollback_with_its_last_line_shown(
    runs: dict[str, Run], name: str
) -> None:
    run = runs[name]
    shown, kept = flat(run.final), flat(run.history)

    assert flat(run.summary[-1:]) in shown
    assert all(flat([line]) in kept for line in run.summary)
    assert flat(run.summary) in shown  # these stories' summaries fit their terminals
    after = "\n".join(run.final).split(run.summary[-1].split()[-1])[-1]
    assert not re.search(r"^\s*\[\d\d:\d\d", after, re.MULTILINE)  # no happening under it


@pytest.mark.parametrize("name", [run.name for run in RUNS if not run.serve])
def test_the_header_the_summary_and_the_replay_hint_fit_the_terminal_together(
    runs: dict[str, Run], name: str
) -> None:
    """From the summary's title to the command that replays the story, with the header and
    its blank row above and a shell prompt's row below: no more rows than the terminal's."""
    run = runs[name]
    start = next(i for i, row in enumerate(run.final) if row.startswith("Summary of"))
    end = next(i for i, row in enumerate(run.final) if EXITED in row)  # bash's, for the prompt
    taken = sum(rows_taken(row, run.size.columns) for row in run.final[start:end])

    assert HEADER_ROWS + 1 + taken + 1 <= run.size.lines, "\n".join(run.final)


def test_the_commands_to_try_the_api_are_printed_whole_after_the_summary(
    runs: dict[str, Run],
) -> None:
    final = runs["two-clusters-120x40-serve"].final
    at = {prefix: next(i for i, r in enumerate(final) if r.startswith(prefix)) for prefix in PASTED}

    assert re.fullmatch(r"REST: http://127\.0\.0\.1:\d+", final[at["REST: "]])
    assert re.fullmatch(
        r"try the API:  \S+ status -n demo --server http://127\.0\.0\.1:\d+ --token=\S+",
        final[at["try "]],
    )
    keda = next(row for row in final if row.startswith("try KEDA:"))
    assert keda.endswith(".result)'") and "raycluster-first-raycluster-" in keda
    summary_end = max(i for i, row in enumerate(final) if row.startswith("    second-raycluster"))
    serving = next(i for i, row in enumerate(final) if row.startswith(SERVING))
    assert summary_end < min(at.values()) and max(at.values()) < serving


def test_a_story_that_does_not_serve_on_says_how_to_try_the_api(runs: dict[str, Run]) -> None:
    final = runs["two-clusters-80x24"].final
    told = flat(final).split(flat(runs["two-clusters-80x24"].summary[-1:]))[1].strip()

    assert told.startswith("The REST API and KEDA scaler stopped with the story. To try them,")
    assert re.search(rf"run it again: \S+ demo --serve {EXITED} 0", told)
    assert not any(row.startswith(PASTED) for row in final)


def test_the_table_names_its_columns_for_what_they_hold_and_drops_the_queue_at_80(
    runs: dict[str, Run],
) -> None:
    rays = [
        row for s in runs["two-clusters-80x24"].story_screens for row in s if "NAMESPACE" in row
    ]
    kinds = [row for s in runs["many-kinds-80x24"].story_screens for row in s if "NAMESPACE" in row]

    assert {tuple(row.split()) for row in rays} == {
        ("RAYCLUSTER", "NAMESPACE", "GPUS", "UTIL", "STATE")
    }
    assert {tuple(row.split()) for row in kinds} == {
        ("OWNER", "KIND", "NAMESPACE", "GPUS", "UTIL", "STATE")
    }
    rows = {row.split()[0]: row.split()[1] for s in runs["many-kinds-80x24"].story_screens
            for row in s if row.startswith(("alice ", "train-7 ", "ray-tune "))}  # fmt: skip
    assert rows == {"alice": "Notebook", "train-7": "PyTorchJob", "ray-tune": "RayCluster"}


def test_the_warning_the_cli_snooze_and_the_snoozed_state_are_on_screen(
    runs: dict[str, Run],
) -> None:
    screens = runs["two-clusters-120x40-serve"].screens
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


def test_ctrl_c_ends_the_serving_demo_with_status_130(runs: dict[str, Run]) -> None:
    screen = runs["two-clusters-120x40-serve"].exit_screen

    (exited,) = [row for row in screen if EXITED in row]  # after the echoed ^C
    assert exited.endswith(f"{EXITED} 130")
    assert not any("Traceback" in row for row in screen)
