"""A stop's audit record, written `started` before its patch, settles to `done` in place once
the patch succeeded (`RuntimeState.recorded`), while the guards still count it as a begun
stop; a failure and a lost answer's settlement stay rows of their own beside it."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from autoscaler.adapters.state.guards import loop_record
from autoscaler.domain.audit.records import LOOP_ACTOR, AuditRecord, RuntimeState
from autoscaler.domain.guards.screen import started_in_last_hour
from tests.support.domain_builders import NOW

BEGUN = AuditRecord(
    at=NOW,
    actor=LOOP_ACTOR,
    action="deactivate",
    target="team-a/rc",
    reason="idle for the whole window",
    outcome="started",
    gpus=2,
    peak=0.01,
)


def follow_up(outcome: str, **changes: Any) -> AuditRecord:
    return replace(BEGUN, outcome=outcome, reason="", gpus=None, peak=None, **changes)


def trail(*later: AuditRecord) -> tuple[AuditRecord, ...]:
    state = RuntimeState().recorded((BEGUN,), limit=10)
    for record in later:
        state = state.recorded((record,), limit=10)
    return state.audit


def test_a_done_patch_settles_the_begun_record_in_place_keeping_its_reason_and_figures() -> None:
    # the ConfigMap keeps times to the second: the follow-up's fraction still matches
    [settled] = trail(follow_up("done", at=NOW + timedelta(microseconds=300)))

    assert (settled.outcome, settled.reason, settled.gpus, settled.peak) == (
        "done",
        BEGUN.reason,
        2,
        0.01,
    )


def test_the_settled_record_is_still_a_begun_stop_for_the_hourly_cap() -> None:
    [settled] = trail(follow_up("done"))
    counted = loop_record(settled)

    assert counted is not None and counted.outcome is None
    assert started_in_last_hour([counted], now=NOW + timedelta(minutes=5)) == 1


@pytest.mark.parametrize(
    "outcome",
    [
        pytest.param("failed: 503 Service Unavailable", id="failed"),
        pytest.param("unknown: answer lost, settled next cycle", id="answer-lost"),
        pytest.param(
            "done: confirmed: the Workload carries our deactivated-at annotation",
            id="lost-answer-confirmed",
        ),
    ],
)
def test_a_write_not_plainly_done_is_a_row_of_its_own_beside_the_begun_one(outcome: str) -> None:
    assert [r.outcome for r in trail(follow_up(outcome))] == [outcome, "started"]


@pytest.mark.parametrize(
    "other",
    [
        pytest.param({"target": "team-a/other"}, id="another-workload"),
        pytest.param({"at": NOW + timedelta(minutes=1)}, id="another-stop"),
        pytest.param({"action": "delete"}, id="another-deed"),
        pytest.param({"actor": "alice"}, id="a-persons-record"),
    ],
)
def test_done_settles_only_the_record_of_the_same_deed(other: dict[str, object]) -> None:
    assert [r.outcome for r in trail(follow_up("done", **other))] == ["done", "started"]


def test_done_without_its_begun_record_is_kept_and_counted_once() -> None:
    [kept] = RuntimeState().recorded((follow_up("done"),), limit=10).audit

    counted = loop_record(kept)
    assert counted is not None and started_in_last_hour([counted], now=NOW) == 1
