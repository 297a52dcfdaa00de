"""Kueue's fair sharing as decision tables whose expected answers are Kueue's own unit tests
(kubernetes-sigs/kueue at ff69552e), each row citing its file and case:

- the dominant resource share of a ClusterQueue: pkg/cache/scheduler/fair_sharing_test.go
  `TestDominantResourceShare` (DrValue, DrName, Borrowing: the value Kueue reports, rounded
  up), `TestIsBorrowingOn`, `TestPreciseWeightedShareSerialized`;
- the order of two heads: pkg/scheduler/scheduler_test.go `TestEntryComparerLess`;
- who is admitted first: pkg/scheduler/scheduler_fs_test.go `TestScheduleForFairSharing`.
  Where a case gives its root Cohort a quota of its own, the row lends that quota from a
  ClusterQueue of the cohort that has no waiter: for a flat cohort's root both count the
  same (resource_node.go `accumulateFromChild`, fair_sharing.go `calculateLendable`: the
  root's subtree quota is what is lent).

Then the reclaim plan with fair sharing: a freed borrower's quota goes to the waiter Kueue
picks, and is not freed for a waiter another queue's head is ahead of.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta

import pytest

from autoscaler.domain.queues.contention import UnknownWhy, WaiterOutcome, plan_reclaim
from autoscaler.domain.queues.facts import FairSharingOrder, QueueFacts, QueueQuota, ResourceQuota
from autoscaler.domain.queues.fair_sharing import (
    Head,
    Ranked,
    Share,
    TurnKind,
    rank,
    serves_before,
    share,
    turn_of,
)
from tests.support.domain_builders import minutes_ago
from tests.support.quota_builders import GPU, a_flavor, a_queue, a_waiter, an_idle, quota

FS_TEST = "pkg/cache/scheduler/fair_sharing_test.go"
CPU, KGPU = "cpu", "example.com/gpu"  # Kueue's tests' GPU resource


def fair(built: QueueQuota, weight: float = 1.0) -> QueueQuota:
    return replace(built, fair_sharing=True, fair_weight=weight)


def cq_and_lender(
    cq: Mapping[str, int | ResourceQuota],
    lender: Mapping[str, int | ResourceQuota],
    *,
    weight: float = 1.0,
) -> dict[str, QueueQuota]:
    """`TestDominantResourceShare`'s "cq" and "lending-cq" in "test-cohort" ("default")."""
    made = {
        "cq": fair(a_queue("cq", cohort="test-cohort").group(a_flavor("default", cq)).build()),
        "lending-cq": fair(
            a_queue("lending-cq", cohort="test-cohort").group(a_flavor("default", lender)).build()
        ),
    }
    made["cq"] = replace(made["cq"], fair_weight=weight)
    return made


def used(queues: dict[str, QueueQuota], usage: dict[tuple[str, str], int]) -> dict[str, QueueQuota]:
    return {**queues, "cq": replace(queues["cq"], usage=usage)}


D = "default"
TWO_FIVE = {CPU: 2000, KGPU: 5}
EIGHT_FIVE = {CPU: 8000, KGPU: 5}
SHARES = [
    pytest.param(
        {"cq": fair(a_queue("cq").group(a_flavor(D, {CPU: 2000, KGPU: 5}))
                    .using(D, CPU, 1000).using(D, KGPU, 2).build())},
        {}, 0, "", False, id=f"{FS_TEST} no cohort",
    ),
    pytest.param(
        used(cq_and_lender(TWO_FIVE, EIGHT_FIVE), {(D, CPU): 1000, (D, KGPU): 2}),
        {}, 0, "", False, id=f"{FS_TEST} usage below nominal",
    ),
    pytest.param(
        used(cq_and_lender(TWO_FIVE, EIGHT_FIVE), {(D, CPU): 3000, (D, KGPU): 7}),
        {}, 200, KGPU, True, id=f"{FS_TEST} usage above nominal",
    ),
    pytest.param(
        used(cq_and_lender({KGPU: 500}, {KGPU: 1000}), {(D, KGPU): 501}),
        {}, 1, KGPU, True,
        id=f"{FS_TEST} usage slightly above nominal in a cohort with large quotas",
    ),
    pytest.param(
        used(cq_and_lender({KGPU: 500}, {KGPU: 1000}, weight=300), {(D, KGPU): 800}),
        {}, 1, KGPU, True,
        id=f"{FS_TEST} usage way above nominal in a cohort with large quotas and weights",
    ),
    pytest.param(
        used(cq_and_lender(TWO_FIVE, EIGHT_FIVE), {(D, CPU): 3000, (D, KGPU): 3}),
        {}, 100, CPU, True, id=f"{FS_TEST} one resource above nominal",
    ),
    pytest.param(
        used(cq_and_lender(TWO_FIVE, EIGHT_FIVE), {(D, CPU): 1000, (D, KGPU): 2}),
        {(D, CPU): 4000, (D, KGPU): 4}, 300, CPU, True,
        id=f"{FS_TEST} usage with workload above nominal",
    ),
    pytest.param(
        used(
            cq_and_lender(
                {CPU: 2000, KGPU: quota(2, lending=0)}, {CPU: 8000, KGPU: quota(64, lending=0)}
            ),
            {(D, CPU): 1000, (D, KGPU): 1},
        ),
        {(D, CPU): 4000, (D, KGPU): 4}, 300, CPU, True,
        id=f"{FS_TEST} A resource with zero lendable",
    ),
    pytest.param(
        {
            "cq": fair(
                a_queue("cq", cohort="test-cohort")
                .group(a_flavor("on-demand", {CPU: 20_000}), a_flavor("spot", {CPU: 80_000}))
                .using("on-demand", CPU, 15_000).using("spot", CPU, 5000).build()
            ),
            "lending-cq": fair(
                a_queue("lending-cq", cohort="test-cohort").group(a_flavor(D, {CPU: 100_000}))
                .build()
            ),
        },
        {("on-demand", CPU): 10_000}, 25, CPU, True, id=f"{FS_TEST} multiple flavors",
    ),
    pytest.param(
        used(cq_and_lender({KGPU: 5}, {KGPU: 5}, weight=2), {(D, KGPU): 7}),
        {}, 100, KGPU, True, id=f"{FS_TEST} above nominal with integer weight",
    ),
    pytest.param(
        used(cq_and_lender({KGPU: 5}, {KGPU: 5}, weight=0.5), {(D, KGPU): 7}),
        {}, 400, KGPU, True, id=f"{FS_TEST} above nominal with decimal weight",
    ),
    pytest.param(
        used(cq_and_lender({KGPU: 5}, {KGPU: 5}, weight=0), {(D, KGPU): 7}),
        {}, 2**63 - 1, KGPU, True, id=f"{FS_TEST} above nominal with zero weight",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("queues", "adding", "value", "dominant", "borrowing"), SHARES)
def test_a_queues_dominant_resource_share_is_kueues(
    queues: dict[str, QueueQuota],
    adding: dict[tuple[str, str], int],
    value: int,
    dominant: str,
    borrowing: bool,
) -> None:
    found = share(queues["cq"], queues, adding)

    assert (found.rounded, found.dominant, found.borrowing) == (value, dominant, borrowing)
    if "lending-cq" in queues:  # the lender never borrows: share 0 in every case
        assert share(queues["lending-cq"], queues).rounded == 0


BORROWING_ON = [  # fair_sharing_test.go TestIsBorrowingOn: cq cpu=2 gpu=5, lender cpu=8 gpu=5
    pytest.param({(D, CPU): 3000}, [(D, CPU)], True, True, id="borrows on requested flavor"),
    pytest.param(
        {(D, CPU): 1000, (D, KGPU): 7}, [(D, CPU)], False, True,
        id="borrows on unrequested flavor only",
    ),
    pytest.param(
        {(D, CPU): 3000, (D, KGPU): 7}, [(D, KGPU)], True, True,
        id="borrows on both, requests one",
    ),
    pytest.param({(D, CPU): 1000, (D, KGPU): 2}, [(D, CPU)], False, False, id="no borrowing"),
    pytest.param({(D, CPU): 3000}, [], False, True, id="nil requestedFRs"),
]  # fmt: skip


@pytest.mark.parametrize(("usage", "requested", "on_requested", "borrowing"), BORROWING_ON)
def test_borrowing_on_the_requested_pairs_is_kueues(
    usage: dict[tuple[str, str], int],
    requested: list[tuple[str, str]],
    on_requested: bool,
    borrowing: bool,
) -> None:
    queues = used(cq_and_lender(TWO_FIVE, EIGHT_FIVE), usage)

    found = share(queues["cq"], queues)

    assert (found.borrows_on(requested), found.borrowing) == (on_requested, borrowing)


@pytest.mark.parametrize(
    ("weight", "ratio", "weighted"),
    [
        pytest.param(0, 100, math.inf, id="zero weight returning Inf"),
        pytest.param(1, 0, 0, id="zero unweighted ratio returns 0"),
        pytest.param(2, 400, 200, id="regular integer division"),
        pytest.param(4, 10, 2.5, id="decimal division"),
    ],
)
def test_the_weighted_share_is_kueues(weight: float, ratio: float, weighted: float) -> None:
    # fair_sharing_test.go TestPreciseWeightedShareSerialized
    assert Share(weight, ratio).weighted == weighted


# scheduler_test.go TestEntryComparerLess: (a's share, b's share, a older?) -> a first?
CPU_D = frozenset({(D, CPU)})
BORROWING = Share(1.0, 0.0, "", CPU_D)  # fair_sharing_test_util.go BorrowingDRS(cpuDefault)
NEGATIVE = Share(1.0, -1.0)  # fair_sharing.go NegativeDRS
ZERO = Share(0.0)  # DRS{}: weight 0, ratio 0
COMPARER = [
    pytest.param(Share(1.0), BORROWING, False, True,
                 id="non-borrowing subtree preferred over borrowing subtree"),
    pytest.param(BORROWING, BORROWING, False, False,
                 id="both borrowing on requested flavors falls through to FIFO"),
    pytest.param(NEGATIVE, ZERO, False, True, id="lower DRS preferred over higher DRS"),
    pytest.param(Share(1.0), Share(1.0), True, True,
                 id="both non-borrowing falls through to FIFO"),
    pytest.param(BORROWING, Share(1.0), True, False,
                 id="a is preemptor, b not, feature disabled"),
]  # fmt: skip


@pytest.mark.parametrize(("a", "b", "a_older", "a_first"), COMPARER)
def test_the_order_of_two_heads_is_kueues(a: Share, b: Share, a_older: bool, a_first: bool) -> None:
    older, newer = minutes_ago(2), minutes_ago(2) + timedelta(seconds=1)
    charge = {(D, CPU): 1000}

    def ranked(name: str, drs: Share, *, created_older: bool) -> Ranked:
        waiter = replace(a_waiter(name, "cq-" + name, {CPU: 1000}),
                         created_at=older if created_older else newer)  # fmt: skip
        return Ranked(Head(waiter, charge), drs)

    first, second = ranked("a", a, created_older=a_older), ranked("b", b, created_older=not a_older)

    assert serves_before(first, second) is a_first


# scheduler_fs_test.go TestScheduleForFairSharing: who Kueue admits first in a cohort.
FS = "pkg/scheduler/scheduler_fs_test.go"


def cohort_a(quota_cpu: int, *, weight: float = 1.0, used_by_b: int = 0) -> dict[str, QueueQuota]:
    """Cohort "A" of the cases: its own quota (lent by "root-quota"), and "b", "c" with 0."""
    on_demand = "on-demand"
    made = {
        "root-quota": a_queue("root-quota", cohort="A").group(
            a_flavor(on_demand, {CPU: quota_cpu})
        ),
        "b": a_queue("b", cohort="A").group(a_flavor(on_demand, {CPU: 0})),
        "c": a_queue("c", cohort="A").group(a_flavor(on_demand, {CPU: 0})),
    }
    made["b"].using(on_demand, CPU, used_by_b)
    return {name: fair(q.build(), 1.0 if name == "root-quota" else weight)
            for name, q in made.items()}  # fmt: skip


ADMITTED_FIRST = [
    pytest.param(
        cohort_a(8000, weight=0, used_by_b=4000), {"priority": 9001}, {"priority": 0}, "c1",
        id=f"{FS} fair sharing two queues with weight 0 schedules workload which borrows less",
    ),
    pytest.param(
        cohort_a(8000, weight=123456789, used_by_b=4000), {"priority": 9001}, {"priority": 0},
        "c1",
        id=f"{FS} fair sharing two queues with high weight schedules workload which borrows less",
    ),
    pytest.param(
        cohort_a(10_000), {"priority": 99, "cpu": 10_000}, {"priority": 101, "cpu": 10_000}, "c1",
        id=f"{FS} fair sharing schedule highest priority first",
    ),
    pytest.param(
        cohort_a(10_000),
        {"priority": 101, "cpu": 10_000, "created_minutes_ago": 1},
        {"priority": 101, "cpu": 10_000, "created_minutes_ago": 2},
        "c1",
        id=f"{FS} fair sharing schedule earliest timestamp first",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("queues", "b1", "c1", "first"), ADMITTED_FIRST)
def test_who_kueue_admits_first_in_a_fair_sharing_cohort(
    queues: dict[str, QueueQuota], b1: dict[str, int], c1: dict[str, int], first: str
) -> None:
    def head(name: str, spec: dict[str, int]) -> Head:
        waiter = a_waiter(
            name, name[0], {CPU: spec.get("cpu", 4000)},
            priority=spec["priority"], created_minutes_ago=spec.get("created_minutes_ago", 10),
        )  # fmt: skip
        return Head(waiter, {("on-demand", CPU): waiter.requests[CPU]})

    b_head, c_head = head("b1", b1), head("c1", c1)

    assert rank([b_head, c_head], queues)[0].head.waiter.ref.name == first
    # Kueue leaves the other head waiting: the first takes the cohort's free quota.
    assert turn_of(b_head.waiter, queues, [c_head.waiter]).kind is TurnKind.BEHIND
    assert turn_of(c_head.waiter, queues, [b_head.waiter]).kind is TurnKind.FIRST


def test_the_lowest_share_goes_first_though_the_other_head_is_older() -> None:
    # FS "with fair sharing: schedule workload with lowest share first": eng-alpha's "new"
    # (5 cpu, share 23.8 with it) before eng-beta's older "older_new" (1 cpu, share 28.6).
    od, spot = "on-demand", "spot"
    alpha = a_queue("eng-alpha", cohort="eng").group(
        a_flavor(od, {CPU: quota(50_000, borrowing=50_000)}),
        a_flavor(spot, {CPU: quota(100_000, borrowing=0)}),
    )
    beta = a_queue("eng-beta", cohort="eng").group(
        a_flavor(od, {CPU: quota(50_000, borrowing=10_000)}),
        a_flavor(spot, {CPU: quota(0, borrowing=100_000)}),
    )
    beta.group(a_flavor("model-a", {KGPU: quota(20, borrowing=0)}))
    shared = a_queue("eng-shared", cohort="eng").group(
        a_flavor(od, {CPU: quota(10_000, borrowing=0)})
    )
    queues = {q.name: fair(q.build()) for q in (alpha.using(od, CPU, 50_000),
                                                 beta.using(od, CPU, 55_000), shared)}  # fmt: skip
    new = a_waiter("new", "eng-alpha", {CPU: 5000}, created_minutes_ago=1)
    older_new = a_waiter("older_new", "eng-beta", {CPU: 1000}, created_minutes_ago=2)

    turn = turn_of(new, queues, [older_new])

    assert (turn.kind, turn.ahead) == (TurnKind.FIRST, ())
    assert "eng-alpha share 24 (cpu" in turn.reason and "eng-beta share 29 (cpu" in turn.reason


# The reclaim plan: freed quota goes to the head Kueue picks.


def lending_cohort(*, weight_b: float, weight_c: float) -> dict[str, QueueQuota]:
    """ "lender" holds 8 GPUs, all used (4 by an idle workload); "b" and "c" hold none."""
    lender = (
        a_queue("lender", cohort="gpus").group(a_flavor("a100", {GPU: 8})).using("a100", GPU, 8)
    )
    b = a_queue("b", cohort="gpus").group(a_flavor("a100", {GPU: 0}))
    c = a_queue("c", cohort="gpus").group(a_flavor("a100", {GPU: 0}))
    return {"lender": fair(lender.build()), "b": fair(b.build(), weight_b),
            "c": fair(c.build(), weight_c)}  # fmt: skip


def plan_for(queues: dict[str, QueueQuota]) -> tuple[dict[str, str], dict[str, WaiterOutcome]]:
    idle = an_idle("idle", "lender", gpus=4, cohort="gpus")
    waiters = (
        a_waiter("wb", "b", {GPU: 4}, priority=10),  # judged first: the higher priority
        a_waiter("wc", "c", {GPU: 4}, priority=0),
    )
    plan = plan_reclaim([idle], QueueFacts(queues=queues, waiters=waiters))
    freed = {r.candidate.ref.name: r.beneficiary.name for r in plan.reclaims}
    return freed, {r.waiter.name: r.outcome for r in plan.waiters}


def test_a_freed_borrowers_quota_serves_the_waiter_kueue_picks() -> None:
    freed, outcomes = plan_for(lending_cohort(weight_b=2, weight_c=1))  # b's share is lower

    assert freed == {"idle": "wb"}
    assert outcomes == {"wb": WaiterOutcome.SERVED, "wc": WaiterOutcome.CANNOT_FIT}


def test_nothing_is_freed_for_a_waiter_another_queues_head_is_ahead_of() -> None:
    freed, outcomes = plan_for(lending_cohort(weight_b=1, weight_c=2))  # c's share is lower

    assert outcomes["wb"] is WaiterOutcome.ANOTHER_HEAD_FIRST
    assert freed == {"idle": "wc"}  # the quota is freed for the head Kueue serves
    assert outcomes["wc"] is WaiterOutcome.SERVED


def test_without_fair_sharing_the_priority_order_decides() -> None:
    queues = {n: replace(q, fair_sharing=False) for n, q in
              lending_cohort(weight_b=1, weight_c=2).items()}  # fmt: skip

    freed, _ = plan_for(queues)

    assert freed == {"idle": "wb"}


def test_an_order_that_cannot_be_told_is_unknown_for_that_cohorts_waiters_only() -> None:
    queues = lending_cohort(weight_b=2, weight_c=1)
    queues["c"] = replace(queues["c"], order_unknown=("admission fair sharing",))
    elsewhere = fair(a_queue("solo").group(a_flavor("a100", {GPU: 8})).build())
    waiters = (
        a_waiter("wb", "b", {GPU: 4}, priority=10),
        a_waiter("wc", "c", {GPU: 4}),
        a_waiter("ws", "solo", {GPU: 4}),
    )
    idle = an_idle("idle", "lender", gpus=4, cohort="gpus")

    plan = plan_reclaim([idle], QueueFacts(queues={**queues, "solo": elsewhere}, waiters=waiters))

    judged = {r.waiter.name: (r.outcome, r.unknown_why) for r in plan.waiters}
    assert judged == {
        "wb": (WaiterOutcome.FIT_UNKNOWN, UnknownWhy.ORDER_UNKNOWN),
        "wc": (WaiterOutcome.FIT_UNKNOWN, UnknownWhy.ORDER_UNKNOWN),
        "ws": (WaiterOutcome.FITS_ALREADY, None),
    }
    assert plan.reclaims == ()


def test_a_waiter_served_earlier_is_no_longer_a_head_that_competes() -> None:
    queues = lending_cohort(weight_b=2, weight_c=1)
    waiters = (a_waiter("wb", "b", {GPU: 2}, priority=10), a_waiter("wc", "c", {GPU: 2}))
    idle = an_idle("idle", "lender", gpus=4, cohort="gpus")

    plan = plan_reclaim([idle], QueueFacts(queues=queues, waiters=waiters))

    assert [(r.waiter.name, r.outcome) for r in plan.waiters] == [
        ("wb", WaiterOutcome.SERVED),
        ("wc", WaiterOutcome.FITS_ALREADY),  # in the 2 GPUs wb leaves, wb not counted twice
    ]


def test_heads_kueue_admits_first_are_charged_once_and_said_so() -> None:
    queues = lending_cohort(weight_b=1, weight_c=2)
    queues["lender"] = replace(queues["lender"], usage={("a100", GPU): 4})  # 4 GPUs free
    waiters = (a_waiter("wb", "b", {GPU: 2}, priority=10), a_waiter("wc", "c", {GPU: 2}))

    plan = plan_reclaim([], QueueFacts(queues=queues, waiters=waiters))

    (wb, wc) = plan.waiters
    assert wb.outcome is WaiterOutcome.FITS_ALREADY
    assert "first by fair sharing" in wb.reason and "after c admitted" in wb.reason
    assert wc.outcome is WaiterOutcome.FITS_ALREADY
    assert wc.reason == "fits already: Kueue admits it by fair sharing before team-a/wb"


# The gates that shape the order, as Kueue's Configuration sets them (entryComparer.less
# skips step 2 without FairSharingPrioritizeNonBorrowing, step 4 without
# PrioritySortingWithinCohort). Each row: the TestEntryComparerLess case with the gate as
# Kueue's default has it, then the same heads with the gate off.
NON_BORROWING_OFF = FairSharingOrder(prioritize_non_borrowing=False)
PRIORITY_OFF = FairSharingOrder(priority_sorting=False)
GATES = [
    pytest.param(FairSharingOrder(), 0, True, id="non-borrowing subtree preferred (gate on)"),
    pytest.param(NON_BORROWING_OFF, 0, False,
                 id="FairSharingPrioritizeNonBorrowing off: equal shares, the older first"),
    pytest.param(FairSharingOrder(), 1, True, id="equal shares: the higher priority first"),
    pytest.param(PRIORITY_OFF, 1, False,
                 id="PrioritySortingWithinCohort off: equal shares, the older first"),
]  # fmt: skip


@pytest.mark.parametrize(("order", "priority", "newer_first"), GATES)
def test_the_order_follows_kueues_feature_gates(
    order: FairSharingOrder, priority: int, newer_first: bool
) -> None:
    """The newer head does not borrow (a when priority is 0) or has the higher priority;
    the older one borrows (share 0, as BorrowingDRS) or not, at priority 0."""
    older, newer = minutes_ago(2), minutes_ago(1)
    charge = {(D, CPU): 1000}
    new = replace(a_waiter("new", "cq-new", {CPU: 1000}), created_at=newer, priority=priority)
    old = replace(a_waiter("old", "cq-old", {CPU: 1000}), created_at=older)
    old_share = BORROWING if priority == 0 else Share(1.0)
    first = Ranked(Head(new, charge), Share(1.0))
    second = Ranked(Head(old, charge), old_share)

    assert serves_before(first, second, order) is newer_first
    assert serves_before(second, first, order) is not newer_first
