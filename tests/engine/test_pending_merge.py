"""Who waits under Kueue and under KAI Scheduler at once: PendingWorkOf merges the sources'
QueueFacts, and a failure of either is a failure of the whole (never "nobody waits")."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from autoscaler.domain.queues.contention import WaiterOutcome, plan_reclaim
from autoscaler.domain.queues.facts import QueueFacts, merge_queue_facts
from autoscaler.engine.cycle.queues import PendingWorkOf
from tests.support.quota_builders import GPU, a_waiter, an_idle, gpu_queue, queues

KUEUE_CQ, KAI_CQ = "team-a-cq", "kai/team-b"


@dataclass
class FakePending:
    facts: QueueFacts
    reads: list[None] = field(default_factory=list)

    def read_queues(self) -> QueueFacts:
        self.reads.append(None)
        return self.facts


def kueue_facts(*, failure: str | None = None) -> QueueFacts:
    return QueueFacts(
        queues=queues(gpu_queue(KUEUE_CQ, gpus=4, used=4)),
        waiters=(a_waiter("kueue-waiter", KUEUE_CQ, {GPU: 2}),),
        source="visibility",
        failure=failure,
        notes=("a Kueue note",),
    )


def kai_facts(*, failure: str | None = None) -> QueueFacts:
    return QueueFacts(
        queues=queues(gpu_queue(KAI_CQ, gpus=2, used=2)),
        waiters=(a_waiter("kai-waiter", KAI_CQ, {GPU: 2}),),
        source="kai-podgroups",
        failure=failure,
    )


def test_the_merge_holds_the_queues_and_waiters_of_both_sources() -> None:
    merged = PendingWorkOf(FakePending(kueue_facts()), FakePending(kai_facts())).read_queues()

    assert merged.failure is None
    assert set(merged.queues) == {KUEUE_CQ, KAI_CQ}
    assert [w.ref.name for w in merged.waiters] == ["kueue-waiter", "kai-waiter"]
    assert merged.source == "visibility+kai-podgroups"
    assert merged.notes == ("a Kueue note",)


def test_each_source_is_read_once_per_read() -> None:
    kueue, kai = FakePending(kueue_facts()), FakePending(kai_facts())

    PendingWorkOf(kueue, kai).read_queues()

    assert (len(kueue.reads), len(kai.reads)) == (1, 1)


@pytest.mark.parametrize(
    ("kueue", "kai", "named"),
    [
        pytest.param(
            kueue_facts(failure="forbidden"), kai_facts(), "visibility: forbidden", id="kueue"
        ),
        pytest.param(kueue_facts(), kai_facts(failure="no CRD"), "kai-podgroups: no CRD", id="kai"),
    ],
)
def test_a_failure_of_either_source_is_a_failure_and_frees_nothing(
    kueue: QueueFacts, kai: QueueFacts, named: str
) -> None:
    merged = PendingWorkOf(FakePending(kueue), FakePending(kai)).read_queues()
    plan = plan_reclaim([an_idle("idle", KAI_CQ, gpus=2)], merged)

    assert merged.failure is not None and named in merged.failure
    assert plan.reclaims == ()
    assert {r.outcome for r in plan.waiters} == {WaiterOutcome.FIT_UNKNOWN}
    assert len(plan.waiters) == 2  # both sources' waiters are still reported


def test_a_waiter_is_served_only_by_its_own_systems_idle_workloads() -> None:
    merged = merge_queue_facts([kueue_facts(), kai_facts()])

    plan = plan_reclaim([an_idle("kai-idle", KAI_CQ, gpus=2)], merged)

    served = {r.waiter.name: r.outcome for r in plan.waiters}
    assert served == {"kueue-waiter": WaiterOutcome.CANNOT_FIT, "kai-waiter": WaiterOutcome.SERVED}


def test_two_sources_naming_the_same_queue_is_a_failure() -> None:
    merged = merge_queue_facts([kai_facts(), kai_facts()])

    assert merged.failure == "queue kai/team-b is read from two sources"


def test_one_source_is_passed_through_unchanged() -> None:
    facts = kai_facts()

    assert merge_queue_facts([facts]) is facts
