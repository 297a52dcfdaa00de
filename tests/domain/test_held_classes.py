"""What a decision's usage verdict says of how the workload holds its GPUs, asked in one
place by every surface: which held class it is (the notices' words, the audit record, the
savings' two figures) and whether it runs unmonitored (/metrics, the REST listing)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from autoscaler.domain.models import Decision, State
from autoscaler.domain.usage.assessment import Assessment, held_class, running_unmonitored
from tests.support.decision_builders import a_decision

NOT_RUNNING = a_decision("team-a", "stuck").not_running().build()
IDLE = a_decision("team-a", "nb").idle().build()
UNMONITORED = a_decision("team-a", "dark").running_unmonitored().build()


def with_verdict(decision: Decision, state: State) -> Decision:
    return replace(decision, assessment=Assessment(state, "as judged"))


@pytest.mark.parametrize(
    ("decision", "held"),
    [
        pytest.param(NOT_RUNNING, State.NOT_RUNNING, id="not-running"),
        # Warned, then snoozed: the decision's state moves on, the verdict's class stays.
        pytest.param(
            replace(NOT_RUNNING, state=State.SNOOZED), State.NOT_RUNNING, id="snoozed-stuck"
        ),
        pytest.param(IDLE, State.IDLE, id="idle"),
        pytest.param(with_verdict(IDLE, State.IDLE), State.IDLE, id="idle-verdict"),
        pytest.param(with_verdict(IDLE, State.STARTING), State.IDLE, id="starting"),
        pytest.param(UNMONITORED, State.IDLE, id="unmonitored"),
        pytest.param(None, State.IDLE, id="no-decision"),
    ],
)
def test_the_held_class_is_not_running_only_for_that_verdict(
    decision: Decision | None, held: State
) -> None:
    assert held_class(decision) is held


@pytest.mark.parametrize(
    ("decision", "unmonitored"),
    [
        pytest.param(UNMONITORED, True, id="unmonitored"),
        pytest.param(a_decision("team-a", "x").unknown("no series").build(), False, id="unknown"),
        pytest.param(NOT_RUNNING, False, id="not-running"),
        pytest.param(IDLE, False, id="no-verdict"),
        pytest.param(None, False, id="no-decision"),
    ],
)
def test_running_unmonitored_is_what_the_verdict_flags(
    decision: Decision | None, unmonitored: bool
) -> None:
    assert running_unmonitored(decision) is unmonitored
