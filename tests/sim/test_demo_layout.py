"""The live view fitted to a terminal's width (issue 32): lines wrapped between words, the
table's least needed columns dropped and long cells wrapped inside their column, a command
to paste left whole, the happening that does not fit shown by its first words, the summary
left on screen; and the summary, in short lines, says an unknown reason once."""

from __future__ import annotations

import io
import os
from dataclasses import replace
from datetime import timedelta
from types import SimpleNamespace

import pytest

from autoscaler.demo.header import Commands, Header, serve_hint
from autoscaler.demo.layout import Verbatim, fit_table, stamped, stamped_head, wrap, wrap_all
from autoscaler.demo.screen import LiveTable
from autoscaler.demo.summary import Reclaimed, Sooner, Summary, render
from autoscaler.demo.view import Row, table, table_cells
from autoscaler.domain.models import State
from tests.sim.test_demo_classes import alone
from tests.support import demo_runs
from tests.support.decision_builders import a_decision
from tests.support.domain_builders import NOW

QUEUE = "user-queue -> cluster-queue"
SNOOZED = "snoozed until 11:35 by demo-admin, then stop"
HOUR = timedelta(hours=1)
HEADER = Header("idle-gpu-autoscaler demo: t", "a title", "policy: p", "acting: a")


def words(rows: list[str]) -> list[str]:
    return " ".join(rows).split()


def test_a_long_line_wraps_between_words_with_its_continuation_indented() -> None:
    line = "[11:05 +65m] warned first-raycluster: stop planned at 11:20, in 15 min (an Event)"

    rows = stamped("[11:05 +65m]", line.split("] ", 1)[1], 40)

    assert all(len(row) <= 40 for row in rows) and len(rows) == 3
    assert all(row.startswith(" " * 13) and row[13] != " " for row in rows[1:])
    assert words(rows) == line.split()  # no word cut, none split at its hyphen


def test_a_line_to_paste_is_left_whole_for_the_terminal_to_wrap() -> None:
    command = Verbatim("try the API:  idle-gpu-autoscaler status -n demo --token=" + "x" * 60)

    assert wrap(command, 40) == [command]
    assert wrap(str(command), 40) != [command]


def test_the_happening_that_does_not_fit_shows_its_first_words_marked_as_continuing() -> None:
    text = "vit-trainer: grace -> not-running (not running for 15m of 30m since admission)"

    head = stamped_head("[09:16 +16m]", text, 40, rows=2)

    assert len(head) == 2 and head[-1].endswith(" …")
    assert words(head)[:-1] == ["[09:16", "+16m]", *text.split()][: len(words(head)) - 1]
    assert stamped_head("[09:16 +16m]", text, 40, rows=0) == []


def test_a_narrow_table_drops_the_queue_and_wraps_the_state_inside_its_column() -> None:
    found = [
        Row("first-raycluster", "demo", QUEUE, "2/2", "0%", SNOOZED),
        Row("second-raycluster", "demo", QUEUE, "0/2", "-", "deactivated"),
    ]

    wide, narrow = table(found), table(found, width=70)

    assert wide[0].split() == ["RAYCLUSTER", "NAMESPACE", "QUEUE", "GPUS", "UTIL", "STATE"]
    assert narrow[0].split() == ["RAYCLUSTER", "NAMESPACE", "GPUS", "UTIL", "STATE"]
    assert all(len(row) <= 70 for row in narrow)
    state_column = narrow[0].index("STATE")
    cells = [row[state_column:].strip() for row in narrow[1:]]
    assert cells[-1] == "deactivated" and " ".join(cells[:-1]) == SNOOZED
    assert narrow[2].startswith(" " * state_column)  # the state's second row, under STATE


def test_the_columns_kept_do_not_change_as_the_states_grow_or_shrink() -> None:
    short = [Row("first-raycluster", "demo", QUEUE, "2/2", "0%", "busy")]
    long = [replace(short[0], state=SNOOZED)]

    assert table(short, width=79)[0].split() == table(long, width=79)[0].split()


def test_a_table_of_several_kinds_names_its_columns_owner_and_kind() -> None:
    found = [
        Row("alice", "ml", "lq -> cq", "2/2", "0%", "busy", kind="Notebook"),
        Row("ray-tune", "ml", "lq -> cq", "2/2", "85%", "busy"),
    ]

    heads, cells = table_cells(found)

    assert heads[:2] == ("OWNER", "KIND")
    assert [cell[:2] for cell in cells] == [("alice", "Notebook"), ("ray-tune", "RayCluster")]
    assert table_cells(found[1:])[0][0] == "RAYCLUSTER"


KAI_HEADS = ("OWNER", "KIND", "NAMESPACE", "QUEUE", "GPUS", "UTIL", "STATE")
KAI_CELLS = [("kai-shared-notebook (KAI Scheduler)", "RayCluster", "team-c", QUEUE, "2/2", "-",
              "unsupported: KAI fractional GPUs are not supported")]  # fmt: skip


@pytest.mark.parametrize("width", [60, 79])
def test_no_table_row_is_wider_than_asked(width: int) -> None:
    rows = fit_table(KAI_HEADS, KAI_CELLS, width)

    assert all(len(row) <= width for row in rows)
    assert "unsupported:" in words(rows) and "supported" in words(rows)


def test_too_narrow_for_the_table_its_rows_grow_but_no_cell_is_cut() -> None:
    rows = fit_table(KAI_HEADS, KAI_CELLS, 40)  # narrower than STATE and the kept columns

    assert "unsupported:" in words(rows) and "supported" in words(rows)
    assert "kai-shared-notebook" in words(rows)


def test_a_summary_taller_than_the_terminal_is_written_whole_and_what_follows_comes_last() -> None:
    out = io.StringIO()
    screen = LiveTable(out, size=lambda: os.terminal_size((80, 24)))
    summary = ["Summary of t", *(f"  line {n}: " + "word " * 20 for n in range(15))]

    screen.start(HEADER)
    screen.conclude(summary, then=[Verbatim("try KEDA: " + "x" * 200), "serving until Ctrl-C"])

    written = out.getvalue().rsplit("\x1b[J", 1)[1].splitlines()
    assert written[0] == "Summary of t" and len(written) > 24  # it scrolls, nothing dropped
    assert words(written) == words([*summary, "try KEDA: " + "x" * 200, "serving until Ctrl-C"])
    assert written[-1] == "serving until Ctrl-C" and written[-3] == ""
    assert all(len(row) < 80 for row in written if not row.startswith("try KEDA"))


def test_the_summary_says_an_unknown_reason_once() -> None:
    reason = "running but not monitored: pod p has 0 GPU series for 2 requested GPUs"
    decision = replace(a_decision("vision", "nb").build(), reason=reason)
    gappy = replace(a_decision("research", "gappy").build(), reason="peak utilization 75%")
    left = (
        replace(alone("vit-notebook", decision), unknown_for=timedelta(minutes=105),
                unknown_reason=reason),
        replace(alone("gappy", gappy), unknown_for=timedelta(minutes=11),
                unknown_reason="GPU g has no usable samples"),
    )  # fmt: skip
    summary = Summary("noisy", NOW, NOW + timedelta(hours=2), (), (), left, timedelta(hours=1))

    lines = render(summary)

    unknown = next(line for line in lines if "vit-notebook" in line)
    assert unknown.count(reason) == 1 and unknown.endswith("; unknown for 105 min")
    assert next(line for line in lines if "gappy" in line).endswith(
        "; unknown for 11 min (GPU g has no usable samples)"
    )


def test_the_summary_lines_are_short_times_as_the_story_clock_and_the_why_left_to_explain() -> None:
    grace = replace(
        a_decision("ml", "train-8").build(),
        state=State.GRACE,
        reason="in grace period until 10:25",
    )
    warned = replace(
        a_decision("ml", "train-9").build(),
        state=State.IDLE,
        reason="idle for the whole window; warning: stop planned at 2026-03-02T10:40:00Z "
        "(15m notice)",
    )
    busy = a_decision("ml", "ray-tune").seen("power 349 W, idle baseline 60 W").build()
    stop = Reclaimed("train-7", 4, NOW, NOW + timedelta(minutes=20), False, "warned at 09:45")
    waiter = Sooner(
        "train-8",
        admitted_at=NOW + timedelta(minutes=10),
        dry_run_admitted_at=None,
        dry_run_waiting="insufficient quota for nvidia.com/gpu in ClusterQueue cq-ml",
        by=timedelta(minutes=10),
        after="train-7",
    )
    left = (alone("train-8", grace), alone("ray-tune", busy), alone("train-9", warned))
    summary = Summary("t", NOW, NOW + timedelta(minutes=20), (stop,), (waiter,), left, HOUR)

    lines = render(summary)

    start, end = f"{NOW:%H:%M}", f"{NOW + timedelta(minutes=20):%H:%M}"
    assert lines[0] == f"Summary of t ({start}–{end}, simulated)"
    assert f"    train-7: 4 GPUs {start}–{end} (story end) = 0.00 GPU-hours (warned at 09:45)" in (
        lines
    )
    assert (
        f"    train-8: admitted at {NOW + timedelta(minutes=10):%H:%M} after train-7's stop, "
        "at least 10 min sooner (in dry-run still waiting at the end)" in lines
    )
    assert "    train-8, now grace: in grace period until 10:25" in lines
    assert (  # an annotation's RFC 3339 time in a reason reads as the story's clock
        "    train-9, now idle: idle for the whole window; warning: stop planned at 10:40 "
        "(15m notice)" in lines
    )
    assert "    ray-tune, now busy: peak utilization 85% within the window" in lines


def test_the_when_contended_summary_and_the_replay_hint_fit_80x24_under_the_header() -> None:
    """Its idle clusters left running while nobody waited say why once each, in two rows: the
    header's three rows, a blank one, the summary, a blank row, the command that replays the
    story with its servers (as a story that does not serve on prints it), and a shell
    prompt's row fit an ordinary terminal."""
    run, _ = demo_runs.played("when-contended")
    story = SimpleNamespace(scenario=run.live.scenario)  # all the hint reads of the world
    hint = serve_hint(story, commands=Commands("idle-gpu-autoscaler", "python"))
    rows = wrap_all([*render(run.summary), "", *hint], 80)

    assert 3 + 1 + len(rows) + 1 <= 24, "\n".join(rows)
    held = [row for row in render(run.summary) if "left running" in row]
    assert len(held) == 2 and not any("idle for the whole window" in row for row in held), held
