"""The demo's words for the usage classes (ISSUE 16): loading says what it is loading by,
idle-held how many GPUs sit idle, a change of class carries its evidence, and the summary's
"left alone" says the same; the table keeps its layout."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from autoscaler.demo.summary import LeftAlone, Summary, render
from autoscaler.demo.view import Row, change_text, state_text, table
from autoscaler.domain.models import Decision, State
from tests.support.decision_builders import (
    DRIVER_ATTACHED,
    FB_CLIMBING,
    NEIGHBOUR_LOADS,
    a_decision,
)
from tests.support.domain_builders import NOW


@pytest.mark.parametrize(
    ("decision", "shown"),
    [
        pytest.param(
            a_decision("demo", "rc").loading().seen(FB_CLIMBING).build(),
            f"loading: {FB_CLIMBING}",
            id="loading-fb-climbing-at-near-zero-compute",
        ),
        pytest.param(
            a_decision("demo", "rc").idle_held(2, of=4).build(),
            "idle-held (2 of 4 GPUs idle)",
            id="idle-held-2-of-4-gpus-at-zero",
        ),
        pytest.param(
            a_decision("demo", "rc").idle().seen(DRIVER_ATTACHED).build(),
            "idle for 20 min",
            id="idle-notebook-with-a-driver-attached-is-idle",
        ),
        pytest.param(
            a_decision("demo", "rc").idle().seen(NEIGHBOUR_LOADS).build(),
            "idle for 20 min",
            id="mig-instance-whose-neighbour-loads-is-idle",
        ),
        pytest.param(
            a_decision("demo", "rc").seen("ray: 3 tasks running").build(),
            "busy",
            id="busy-keeps-its-one-word-cell",
        ),
    ],
)
def test_each_class_has_its_own_words_in_the_table(decision: Decision, shown: str) -> None:
    assert state_text(decision, now=NOW) == shown


def test_a_change_of_class_carries_the_evidence_that_made_it() -> None:
    loading = a_decision("demo", "rc").loading().seen(FB_CLIMBING, "pcie receiving 2 GB/s")

    said = change_text(State.BUSY, loading.build())

    assert said == (
        "busy -> loading (loading for 20 min at near-zero compute; "
        f"evidence: {FB_CLIMBING}; pcie receiving 2 GB/s)"
    )


def test_a_change_to_idle_held_says_how_many_gpus_and_no_evidence_when_none_was_seen() -> None:
    said = change_text(State.BUSY, a_decision("demo", "rc").idle_held(2, of=4).build())

    assert said == (
        "busy -> idle-held (2 of 4 GPUs idle) (2 of 4 GPUs busy, 2 idle for the whole window)"
    )


def test_the_table_keeps_one_line_per_row_with_the_class_in_the_last_column() -> None:
    cell = state_text(a_decision("demo", "rc").idle_held(2, of=4).build(), now=NOW)

    header, line = table([Row("half-used", "demo", "q", "4/4", "50%", cell)])

    assert header.split()[-1] == "STATE"
    assert line.split("  ")[-1].strip() == "idle-held (2 of 4 GPUs idle)"


def test_the_summary_leaves_idle_held_and_loading_work_alone_in_their_own_words() -> None:
    held = a_decision("demo", "half").idle_held(2, of=4).build()
    loading = a_decision("demo", "loader").loading().seen(FB_CLIMBING).build()
    summary = summary_leaving(alone("half", held), alone("loader", loading))

    lines = render(summary)

    assert (
        "    half, now idle-held (2 of 4 GPUs idle): 2 of 4 GPUs busy, 2 idle for the whole "
        "window" in lines
    )
    assert (
        "    loader, now loading: loading for 20 min at near-zero compute; "
        f"evidence: {FB_CLIMBING}" in lines
    )


def summary_leaving(*left_alone: LeftAlone) -> Summary:
    """A two-hour noisy run that stopped nothing and left these alone."""
    return Summary(
        scenario="noisy",
        started=NOW,
        ended=NOW + timedelta(hours=2),
        reclaimed=(),
        sooner=(),
        left_alone=left_alone,
        window=timedelta(hours=1),
    )


def alone(name: str, decision: Decision) -> LeftAlone:
    return LeftAlone(
        raycluster=name,
        state=decision.state,
        reason=decision.reason,
        decision=decision,
        longest_idle=timedelta(0),
        unknown_for=timedelta(0),
        unknown_reason="",
    )


def test_the_summary_says_the_longest_idle_stretch_beside_the_window_not_as_a_part_of_it() -> None:
    stretch = replace(
        alone("idler", a_decision("demo", "idler").build()), longest_idle=timedelta(minutes=110)
    )
    summary = summary_leaving(stretch)

    [said] = [line for line in render(summary) if "idler" in line]

    assert said.endswith("; idle 110 min (window 60 min)")
    assert " of 60 min" not in said
