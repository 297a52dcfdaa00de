"""What the soak benchmark (benchmarks/bench_soak.py) found, pinned as tests over fakes."""

from __future__ import annotations

from autoscaler.domain.guards.screen import Contest, GuardMemory
from tests.guards.fleet import Gpu, GuardedFleet, ref
from tests.support.domain_builders import NOW


def test_contested_workloads_do_not_use_up_the_per_cycle_cap() -> None:
    """Seen in the soak: once a GitOps tool had undone more workloads than the per-cycle cap,
    every other idle workload waited forever, "deferred: cap of N deactivations per cycle
    reached", while the cap's slots went to contested workloads that are never acted on
    (they stay idle, so they sort first, longest idle)."""
    fleet = GuardedFleet(
        {"contested-0": Gpu.IDLE_LONG, "contested-1": Gpu.IDLE_LONG, "waiting": Gpu.IDLE_LONG},
        cap=2,
    )
    marks = {
        ref(n): Contest(since=NOW, reason="undone 3 times") for n in ("contested-0", "contested-1")
    }
    fleet.state.memory = GuardMemory(contested=marks)

    for _ in range(3):
        fleet.cycle()

    assert fleet.deactivated() == [ref("waiting")]


def test_a_deactivation_whose_answer_was_lost_still_counts_when_someone_undoes_it() -> None:
    """The soak's "patch timed out after applying": the API server applied the patch, the
    answer never came back. A GitOps tool that undoes such deactivations is fought forever,
    never marked contested, while the same tool is marked after three undos when the
    answers arrive. The lost answer is `unknown`, settled next cycle from the Workload's
    deactivated-at annotation, though the tool set it back to active before that cycle."""
    fleet = GuardedFleet({"flapper": Gpu.IDLE_LONG})
    fleet.cluster.lose_answer = True  # applied, then AnswerLost
    for _ in range(6):
        fleet.cycle()
        fleet.reactivate("flapper")
    last = fleet.cycle()

    assert last.guards is not None
    assert last.guards.contested == (ref("flapper"),)
