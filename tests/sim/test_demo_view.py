"""What a person watching the demo reads: the API's words, Kueue's events in causal order, a
window still filling told apart from busy, and a header that a redraw never overwrites."""

from __future__ import annotations

import io
import logging
import os
import re
from datetime import timedelta
from pathlib import Path

import pytest

from autoscaler.compose.demo import build_demo_service
from autoscaler.demo.endpoints import Endpoints
from autoscaler.demo.header import HEADER_ROWS, Commands, endpoint_lines, header_of
from autoscaler.demo.layout import Verbatim
from autoscaler.demo.run import DemoOptions
from autoscaler.demo.scenarios import SCENARIOS
from autoscaler.demo.screen import LiveTable
from autoscaler.demo.story import World
from autoscaler.demo.view import Filling, state_text
from autoscaler.domain.models import Action, Decision, State, WorkloadRef
from autoscaler.domain.notices.notice import Notice
from tests.support.demo_runs import play_served
from tests.support.domain_builders import A_DEFAULT_RULE

NOW = SCENARIOS["two-clusters"].start + timedelta(minutes=65)  # 11:05
WORKLOAD = SCENARIOS["two-clusters"].arrivals[0].spec.workload_name
ENDPOINTS = Endpoints("http://127.0.0.1:18080", "127.0.0.1:19090", token="-tok3n")
COMMANDS = Commands(cli="idle-gpu-autoscaler", python="python")


@pytest.fixture(scope="module")
def printed() -> str:
    """two-clusters at max speed, plain lines, its REST API served as `demo` serves it."""
    out = io.StringIO()
    options = DemoOptions(scenario="two-clusters", speed=None, interactive=False)
    play_served(options, out=out)
    return out.getvalue()


def table_state(printed: str, stamp: str, raycluster: str) -> str:
    row = re.search(rf"^\[{stamp}\] {raycluster} .*$", printed, re.MULTILINE)
    assert row is not None, f"no {raycluster} row at {stamp}"
    return row.group(0).split("  ")[-1].strip()


def test_the_stopped_job_s_quiet_gpus_read_as_a_window_still_filling_not_busy(
    printed: str,
) -> None:
    # The job stops at 10:20; the pods started at 10:00, so the 60-minute window reaches the
    # 80% coverage the engine needs at 10:48, when idle time starts being counted.
    assert table_state(printed, "10:20 \\+20m", "first-raycluster") == "busy"  # 85% a minute ago
    assert table_state(printed, "10:30 \\+30m", "first-raycluster") == (
        "quiet, window filling (50% of 80%)"
    )
    assert table_state(printed, "10:40 \\+40m", "first-raycluster") == (
        "quiet, window filling (67% of 80%)"
    )
    assert table_state(printed, "10:50 \\+50m", "first-raycluster") == "idle for 30 min"


def test_kueue_admits_the_second_cluster_after_the_deactivation_that_freed_its_quota(
    printed: str,
) -> None:
    lines = printed.splitlines()
    deactivated = next(i for i, line in enumerate(lines) if "deactivated first-raycluster:" in line)
    admitted = next(i for i, line in enumerate(lines) if "Kueue admitted second-raycluster" in line)

    assert deactivated < admitted


def test_the_warning_the_cli_snooze_and_the_second_warning_are_told_in_order(
    printed: str,
) -> None:
    lines = [line.split("] ", 1)[1] for line in printed.splitlines() if line.startswith("[11:")]
    table = ("quota: ", "RAYCLUSTER ", "first-raycluster ", "second-raycluster ")
    told = [line for line in lines if not line.startswith(table)]

    assert told[:4] == [
        "warned first-raycluster: stop planned at 11:20, in 15 min (an Event, annotations "
        "and the notifications say so)",
        "a person reads the warning and keeps first-raycluster from the CLI (IGA_URL and "
        "IGA_TOKEN: the demo's REST URL and token, which `demo --serve` prints):",
        f"$ {Commands.here().python} -m autoscaler snooze demo/first-raycluster 30m "
        "--reason 'checking the results after lunch'",
        f"  demo/{WORKLOAD} kept until 2026-03-02T11:35:00Z",
    ]
    assert told[4].startswith("first-raycluster: idle -> snoozed (")
    assert told[5].startswith("warned first-raycluster: stop planned at 11:35, in 15 min")


def test_the_table_shows_the_planned_stop_then_who_snoozed_until_when(printed: str) -> None:
    snoozed = "snoozed until 11:35 by demo-admin"

    assert table_state(printed, "11:10 \\+70m", "first-raycluster") == snoozed
    assert table_state(printed, "11:20 \\+80m", "first-raycluster") == f"{snoozed}, then stop"
    assert table_state(printed, "11:40 \\+100m", "first-raycluster") == "deactivated"


@pytest.mark.parametrize(
    ("state", "notice", "expected"),
    [
        pytest.param(
            State.IDLE,
            Notice(warned_at=NOW, stop_at=NOW + timedelta(minutes=15)),
            "idle for 45 min, stop planned at 11:20",
            id="warned-idle-shows-its-planned-stop",
        ),
        pytest.param(
            State.SNOOZED,
            Notice(snoozed_until=NOW + timedelta(minutes=30), snoozed_by="alice"),
            "snoozed until 11:35 by alice",
            id="snoozed-shows-until-when-and-by-whom",
        ),
        pytest.param(
            State.SNOOZED,
            Notice(
                warned_at=NOW + timedelta(minutes=15),
                stop_at=NOW + timedelta(minutes=30),
                snoozed_until=NOW + timedelta(minutes=30),
                snoozed_by="alice",
            ),
            "snoozed until 11:35 by alice, then stop",
            id="warned-again-before-the-snooze-ends",
        ),
        pytest.param(
            State.UNKNOWN,
            Notice(warned_at=NOW, stop_at=NOW + timedelta(minutes=15)),
            "unknown, stop planned at 11:20",
            id="unknown-holds-the-warning-and-shows-it",
        ),
        pytest.param(
            State.DEACTIVATED,
            Notice(warned_at=NOW, stop_at=NOW),
            "deactivated",
            id="a-stopped-workload-shows-no-planned-stop",
        ),
    ],
)
def test_a_workloads_notice_is_shown_beside_its_state(
    state: State, notice: Notice, expected: str
) -> None:
    decision = Decision(
        WorkloadRef("demo", "w"),
        state,
        Action.NONE,
        "r",
        idle_since=NOW - timedelta(minutes=45),
        notice=notice,
        rule=A_DEFAULT_RULE,
    )

    assert state_text(decision, now=NOW) == expected


@pytest.mark.parametrize(
    ("state", "action", "expected"),
    [
        pytest.param(State.DEACTIVATED, Action.NONE, "suspended", id="a-stopped-one"),
        pytest.param(State.IDLE, Action.DEACTIVATE, "suspended", id="stopped-this-cycle"),
        pytest.param(State.IDLE, Action.DELETE, "deleted", id="a-deletion-keeps-its-word"),
        pytest.param(State.BUSY, Action.NONE, "busy", id="a-running-one-keeps-its-class"),
    ],
)
def test_a_stopped_workload_reads_the_stopped_word_it_is_given(
    state: State, action: Action, expected: str
) -> None:
    decision = Decision(
        WorkloadRef("team-c", "kai-notebook"), state, action, "r", rule=A_DEFAULT_RULE
    )

    assert state_text(decision, now=NOW, stopped="suspended") == expected


def test_the_demo_uses_the_api_s_state_words(printed: str) -> None:
    assert "first-raycluster: grace -> busy (peak utilization 85%" in printed
    assert "second-raycluster: pending -> grace" in printed
    assert "running" not in printed.replace("runs the mnist", "")


@pytest.mark.parametrize(
    ("state", "utilization", "coverage", "expected"),
    [
        pytest.param(
            State.BUSY, 0.0, 0.5, "quiet, window filling (50% of 80%)", id="quiet-filling"
        ),
        pytest.param(State.BUSY, 0.85, 0.5, "busy", id="busy-while-filling-is-busy"),
        pytest.param(State.BUSY, 0.0, 0.9, "busy", id="quiet-but-covered-is-the-engine-s-busy"),
        pytest.param(State.BUSY, None, 0.5, "busy", id="no-utilization-read-is-not-quiet"),
        pytest.param(State.UNKNOWN, 0.0, 0.5, "unknown", id="unknown-stays-unknown"),
        pytest.param(State.GRACE, 0.0, 0.1, "grace", id="grace-stays-grace"),
    ],
)
def test_a_window_still_filling_is_told_apart_only_for_quiet_gpus_the_engine_calls_busy(
    state: State, utilization: float | None, coverage: float, expected: str
) -> None:
    decision = Decision(
        WorkloadRef("demo", "w"), state, Action.NONE, "r", coverage=coverage, rule=A_DEFAULT_RULE
    )
    filling = Filling(threshold=0.05, min_coverage=0.8)
    now = SCENARIOS["two-clusters"].start

    shown = filling.text(decision, utilization) or state_text(decision, now=now)

    assert shown == expected


def world() -> World:
    return story_world("two-clusters")


def story_world(scenario: str) -> World:
    return World.build(
        SCENARIOS[scenario],
        dry_run=False,
        speed=None,
        build_service=build_demo_service,
        logger=logging.getLogger("test-demo-view"),
    )


def test_after_the_summary_the_endpoints_and_commands_to_try_them_are_printed_whole() -> None:
    lines = endpoint_lines(world(), ENDPOINTS, commands=COMMANDS)
    workload = SCENARIOS["two-clusters"].arrivals[0].spec.workload_name

    assert "REST: http://127.0.0.1:18080" in lines
    assert "gRPC: 127.0.0.1:19090" in lines and "token: -tok3n" in lines
    cli = next(line for line in lines if line.startswith("try the API:"))
    keda = next(line for line in lines if line.startswith("try KEDA:"))
    assert cli.endswith(
        "idle-gpu-autoscaler status -n demo --server http://127.0.0.1:18080 --token=-tok3n"
    )
    assert 'grpc.insecure_channel("127.0.0.1:19090")' in keda and workload in keda
    assert keda.startswith("try KEDA:     python -c '") and keda.count("'") == 2
    assert all(isinstance(line, Verbatim) for line in lines)  # never wrapped by the view


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("columns", [80, 100, 120])
def test_the_header_takes_at_most_three_rows_with_every_word_whole(
    scenario: str, columns: int
) -> None:
    header = header_of(story_world(scenario))
    width = columns - 1  # the view leaves the last column free

    rows = header.lines(width)

    assert 2 <= len(rows) <= HEADER_ROWS
    assert all(len(row) <= width for row in rows)
    unwrapped = iter(" ".join(header.lines()).split())
    # every word as the unwrapped header has it and in its order (`in` on an iterator moves it
    # on): nothing cut or split, only a part the width leaves out missing
    assert all(word in unwrapped for word in " ".join(rows).split())
    assert rows[0].startswith(f"idle-gpu-autoscaler demo: {scenario}")
    assert "policy: every GPU at or below 5% for 1h" in " ".join(rows)
    assert "REST" not in " ".join(rows) and "token" not in " ".join(rows)


def test_a_long_title_leaves_the_header_at_80_columns_and_the_rest_stays() -> None:
    header = header_of(story_world("many-kinds"))

    assert header.shows_title(119) and not header.shows_title(79)
    assert header.lines(79) == [
        "idle-gpu-autoscaler demo: many-kinds",
        "policy: every GPU at or below 5% for 1h, grace 15m, coverage at least 80%",
        "acting: warns, then stops; the summary compares a replay that stops nothing",
    ]


def test_the_commands_name_the_console_script_as_it_can_be_run_from_here(tmp_path: Path) -> None:
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "idle-gpu-autoscaler").touch()
    python = str(bin_dir / "python")

    inactive = Commands.here(executable=python, cwd=tmp_path, which=lambda _: None)
    active = Commands.here(
        executable=python, cwd=tmp_path, which=lambda _: str(bin_dir / "idle-gpu-autoscaler")
    )
    elsewhere = Commands.here(executable="/opt/py/bin/python3", cwd=tmp_path, which=lambda _: None)

    assert inactive == Commands(".venv/bin/idle-gpu-autoscaler", ".venv/bin/python")
    assert active.cli == "idle-gpu-autoscaler"
    assert elsewhere == Commands("/opt/py/bin/python3 -m autoscaler", "/opt/py/bin/python3")


def test_a_redraw_fits_under_the_header_and_never_reaches_the_last_row() -> None:
    small = os.terminal_size((80, 30))
    out = io.StringIO()
    screen = LiveTable(out, size=lambda: small)
    header = header_of(world())

    screen.start(header)
    screen.conclude([f"summary line {n}" for n in range(20)])

    header_rows = len(header.lines(small.columns - 1)) + 1  # and a blank line
    redraw = out.getvalue().rsplit(f"\x1b[{header_rows + 1};1H\x1b[J", 1)[1]
    assert header_rows <= HEADER_ROWS + 1
    assert redraw.splitlines() == [f"summary line {n}" for n in range(20)]
    assert all(len(line) < small.columns for line in redraw.splitlines())
