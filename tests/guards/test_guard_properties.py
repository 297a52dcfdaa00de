"""Properties of the guarded loop over random histories: the hourly cap holds across
restarts, and an open breaker never lets an action through."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.domain.guards.breaker import BreakerState
from autoscaler.domain.guards.screen import GuardMemory
from autoscaler.domain.models import Action
from tests.guards.fleet import RULES, Gpu, GuardedFleet

FEW = settings(max_examples=30, deadline=None)

# (minutes to the next cycle, restart before it)
steps = st.lists(st.tuples(st.integers(1, 25), st.booleans()), min_size=1, max_size=14)


@FEW
@given(steps)
def test_no_hour_ever_holds_more_deactivations_than_the_hourly_cap(
    history: list[tuple[int, bool]],
) -> None:
    fleet = GuardedFleet.of(idle=120)
    done_at = []
    for minutes, restart in history:
        if restart:
            fleet.restart()
        before = len(fleet.deactivated())
        snapshot = fleet.cycle()
        done_at += [snapshot.taken_at] * (len(fleet.deactivated()) - before)
        fleet.clock.advance(timedelta(minutes=minutes - 1))  # cycle() moved one minute
    for end in done_at:
        in_hour = [t for t in done_at if end - timedelta(hours=1) < t <= end]
        assert len(in_hour) <= RULES.max_per_hour


gpu_states = st.sampled_from([Gpu.BUSY, Gpu.IDLE_LONG, Gpu.IDLE_NOW, Gpu.SILENT])
# per cycle: new states for some workloads, restart?, admin reset?
changes = st.tuples(
    st.dictionaries(st.integers(0, 11), gpu_states, max_size=12), st.booleans(), st.booleans()
)


@FEW
@given(
    st.lists(gpu_states, min_size=12, max_size=12),
    st.booleans(),
    st.lists(changes, min_size=1, max_size=8),
)
def test_while_the_breaker_is_open_nothing_is_deactivated(
    start: list[Gpu], starts_open: bool, history: list[tuple[dict[int, Gpu], bool, bool]]
) -> None:
    fleet = GuardedFleet({f"w-{i}": gpu for i, gpu in enumerate(start)})
    if starts_open:
        fleet.state.memory = GuardMemory(breaker=BreakerState(open=True, reason="earlier"))
    for new_states, restart, reset in history:
        for index, gpu in new_states.items():
            fleet.set(f"w-{index}", gpu)
        if restart:
            fleet.restart()
        if reset:
            fleet.state.memory = GuardMemory()
        before = len(fleet.deactivated())
        snapshot = fleet.cycle()
        assert snapshot.guards is not None
        if snapshot.guards.breaker.open:
            assert len(fleet.deactivated()) == before
            acting = {Action.DEACTIVATE, Action.WOULD_DEACTIVATE}
            assert not any(row.decision.action in acting for row in snapshot.workloads)
