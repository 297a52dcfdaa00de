"""A reconcile cycle runs with the cyclic garbage collector paused, and the collector is back
as it was after every cycle, a crashed one included (issue 18: full collections during a
cycle's reads stalled every REST and KEDA answer)."""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest

from autoscaler.engine.cycle.scheduler import LoopRunner, collector_paused


@pytest.fixture
def collector_enabled() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    if not was_enabled:
        gc.disable()


def runner_of(cycle: Callable[[], object]) -> LoopRunner:
    return LoopRunner(
        run_cycle=cycle,
        interval=timedelta(minutes=1),
        logger=logging.getLogger("tests.collector"),
    )


def test_a_cycle_runs_with_the_collector_paused_and_it_runs_again_after(
    collector_enabled: None,
) -> None:
    seen: list[bool] = []
    runner_of(lambda: seen.append(gc.isenabled()))._guarded_cycle()
    assert seen == [False]
    assert gc.isenabled()


def test_the_collector_runs_again_after_a_cycle_that_crashed(collector_enabled: None) -> None:
    def crash() -> None:
        raise RuntimeError("cycle failed")

    runner = runner_of(crash)
    runner._guarded_cycle()
    assert runner.crashes == 1
    assert gc.isenabled()


def test_a_collector_someone_else_turned_off_stays_off(collector_enabled: None) -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
