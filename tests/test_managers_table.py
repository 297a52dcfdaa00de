"""The managers' table (`domain/policy/management.py`, `MANAGERS`) is the one place a manager
is described: its settings switch is made from its row, and the composition root and the
simulator each wire an actuator for every row."""

from __future__ import annotations

import pytest

from autoscaler.compose.managers import WIRING
from autoscaler.domain.policy.management import (
    MANAGERS,
    SUSPENDED_BY_US,
    Management,
    Manager,
    manager_words,
)
from autoscaler.settings.actuators import ActuatorSettings
from autoscaler.sim.actuators import SIMULATED

ROWS = [pytest.param(manager, row, id=manager.value) for manager, row in MANAGERS.items()]


def test_every_manager_has_one_row_a_real_actuator_and_a_simulated_twin() -> None:
    assert set(MANAGERS) == set(Manager)
    assert set(WIRING) == set(Manager)
    assert set(SIMULATED) == set(Manager)


@pytest.mark.parametrize(("manager", "row"), ROWS)
def test_every_row_says_how_its_stop_reads_and_is_undone(manager: Manager, row: Management) -> None:
    words = (row.stop_means, row.bring_back, row.stopped, row.inactive_reason, row.pending_reason)
    assert all(words)
    assert f"`{manager}`" in manager_words()


@pytest.mark.parametrize(("manager", "row"), ROWS)
def test_each_switch_is_made_from_its_row(manager: Manager, row: Management) -> None:
    field = ActuatorSettings.model_fields[manager.value]
    assert field.description == row.section_words
    switch = ActuatorSettings().switch(manager)
    assert switch is row.enabled_by_default
    assert ActuatorSettings.model_validate({manager.value: {"enabled": True}}).switch(manager)


def test_the_rows_that_are_their_own_owner_are_the_suspended_ones() -> None:
    assert {Manager.KAI, Manager.KUBERAY} == SUSPENDED_BY_US
    assert {MANAGERS[m].stopped for m in SUSPENDED_BY_US} == {"suspended"}


def test_a_manager_the_table_does_not_know_is_refused_in_the_settings() -> None:
    with pytest.raises(ValueError, match="no-such-manager"):
        ActuatorSettings.model_validate({"no-such-manager": {"enabled": True}})
