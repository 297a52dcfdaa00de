"""The reclaim plan of `when-contended` as decision tables: which idle workloads are freed,
each for which waiter, and what the plan says about every waiter.

The quotas follow Kueue's "Cluster Queue" concept page (kueue.sigs.k8s.io/docs/concepts/
cluster_queue/), sections "Flavors and borrowing semantics", "BorrowingLimit" and
"LendingLimit", with GPUs of one flavor ("a100") in place of its cpus. A row: the
ClusterQueues, the idle candidates, the waiters, then the expected {candidate: waiter} and
each waiter's outcome in Kueue's order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.queues.contention import (
    Candidate,
    ReclaimPlan,
    WaiterOutcome,
    candidate_of,
    plan_reclaim,
)
from autoscaler.domain.queues.facts import QueueFacts, QueueQuota, ResourceQuota, Waiter
from autoscaler.domain.tenant_names import Named
from tests.support.domain_builders import a_workload
from tests.support.quota_builders import (
    GPU,
    NS,
    a_flavor,
    a_queue,
    a_waiter,
    an_idle,
    gpu_queue,
    queues,
    quota,
)

SERVED = WaiterOutcome.SERVED
ALREADY = WaiterOutcome.FITS_ALREADY
CANNOT = WaiterOutcome.CANNOT_FIT
UNKNOWN = WaiterOutcome.FIT_UNKNOWN

Row = tuple[
    dict[str, QueueQuota],
    Sequence[Candidate],
    Sequence[Waiter],
    dict[str, str],
    Sequence[WaiterOutcome],
]


def plan_of(row: Row) -> ReclaimPlan:
    cluster, idle, waiters, _, _ = row
    return plan_reclaim(idle, QueueFacts(queues=cluster, waiters=tuple(waiters)))


def freed_for(plan: ReclaimPlan) -> dict[str, str]:
    return {r.candidate.ref.name: r.beneficiary.name for r in plan.reclaims}


def gpus(n: int) -> dict[str, int]:
    return {GPU: n}


# One ClusterQueue "cq" with 8 a100 GPUs, all in use.
FULL = queues(gpu_queue("cq", gpus=8, used=8))
HALF = queues(gpu_queue("cq", gpus=8, used=4))

IN_ONE_QUEUE = [
    pytest.param(
        (
            FULL,
            [an_idle("idle", "cq", gpus=4)],
            [a_waiter("w", "cq", gpus(4))],
            {"idle": "w"},
            [SERVED],
        ),
        id="an-idle-workload-is-freed-for-a-waiter-of-its-queue-it-lets-in",
    ),
    pytest.param(
        (FULL, [an_idle("idle", "cq", gpus=4)], [], {}, []),
        id="nobody-waits-so-nothing-is-freed",
    ),
    pytest.param(
        (HALF, [an_idle("idle", "cq", gpus=4)], [a_waiter("w", "cq", gpus(4))], {}, [ALREADY]),
        id="a-waiter-that-fits-already-gets-nothing-freed",
    ),
    pytest.param(
        (FULL, [an_idle("idle", "cq", gpus=4)], [a_waiter("w", "cq", gpus(12))], {}, [CANNOT]),
        id="a-waiter-that-fits-nowhere-even-with-every-idle-workload-freed-gets-nothing",
    ),
    pytest.param(
        (
            FULL,
            [an_idle("idle", "cq", gpus=4)],
            [a_waiter("w", "cq", {GPU: 1, "cpu": 1000})],
            {},
            [CANNOT],
        ),
        id="a-waiter-asking-for-a-resource-its-queue-does-not-cover-gets-nothing",
    ),
    pytest.param(
        (
            FULL,
            [an_idle("a", "cq", gpus=4), an_idle("b", "cq", gpus=4)],
            [a_waiter("w", "cq", gpus(4))],
            {"a": "w"},
            [SERVED],
        ),
        id="one-idle-workload-is-enough-so-the-second-stays",
    ),
    pytest.param(
        (
            FULL,
            [
                an_idle("small", "cq", gpus=2, priority=0),
                an_idle("large", "cq", gpus=6, priority=1),
            ],
            [a_waiter("w", "cq", gpus(5))],
            {"large": "w"},
            [SERVED],
        ),
        id="a-candidate-taken-first-but-not-needed-once-a-second-is-taken-is-dropped",
    ),
    pytest.param(
        (
            FULL,
            [an_idle("a", "cq", gpus=4, priority=0), an_idle("b", "cq", gpus=4, priority=1)],
            [a_waiter("w", "cq", gpus(8))],
            {"a": "w", "b": "w"},
            [SERVED],
        ),
        id="a-waiter-needing-two-idle-workloads-gets-both",
    ),
    pytest.param(
        (
            FULL,
            [an_idle("a", "cq", gpus=4)],
            [
                a_waiter("first", "cq", gpus(4), created_minutes_ago=20),
                a_waiter("second", "cq", gpus(4)),
            ],
            {"a": "first"},
            [SERVED, CANNOT],
        ),
        id="each-idle-workload-serves-one-waiter-the-oldest-of-equal-priority-first",
    ),
    pytest.param(
        (
            FULL,
            [an_idle("a", "cq", gpus=4)],
            [
                a_waiter("old", "cq", gpus(4), created_minutes_ago=20),
                a_waiter("urgent", "cq", gpus(4), priority=10),
            ],
            {"a": "urgent"},
            [SERVED, CANNOT],
        ),
        id="a-higher-priority-waiter-is-served-before-an-older-one",
    ),
    pytest.param(
        (
            HALF,
            [an_idle("a", "cq", gpus=4)],
            [
                a_waiter("first", "cq", gpus(4), created_minutes_ago=20),
                a_waiter("second", "cq", gpus(4)),
            ],
            {"a": "second"},
            [ALREADY, SERVED],
        ),
        id="a-waiter-that-fits-already-takes-the-free-quota-before-the-next-is-served",
    ),
]

# The candidate order: borrowers beyond their queue's nominal quota, then the lowest
# priority, the longest idle, the fewest GPUs.
ORDER = [
    pytest.param(
        (
            FULL,
            [an_idle("high", "cq", gpus=4, priority=5), an_idle("low", "cq", gpus=4, priority=1)],
            [a_waiter("w", "cq", gpus(4))],
            {"low": "w"},
            [SERVED],
        ),
        id="the-lowest-priority-idle-workload-is-freed-first",
    ),
    pytest.param(
        (
            FULL,
            [
                an_idle("recent", "cq", gpus=4, idle_minutes=60),
                an_idle("long", "cq", gpus=4, idle_minutes=120),
            ],
            [a_waiter("w", "cq", gpus(4))],
            {"long": "w"},
            [SERVED],
        ),
        id="the-longest-idle-is-freed-first-at-equal-priority",
    ),
    pytest.param(
        (
            queues(gpu_queue("cq", gpus=12, used=12)),
            [an_idle("eight", "cq", gpus=8), an_idle("four", "cq", gpus=4)],
            [a_waiter("w", "cq", gpus(4))],
            {"four": "w"},
            [SERVED],
        ),
        id="the-fewest-gpus-that-fit-are-freed-at-equal-priority-and-idle-time",
    ),
]


@pytest.mark.parametrize("row", IN_ONE_QUEUE + ORDER)
def test_idle_workloads_are_freed_only_for_a_waiter_they_let_in(row: Row) -> None:
    plan = plan_of(row)
    assert freed_for(plan) == row[3], [r.reason for r in plan.waiters]
    assert [r.outcome for r in plan.waiters] == list(row[4]), [r.reason for r in plan.waiters]


# "Flavors and borrowing semantics" with GPUs: team-a-cq and team-b-cq in cohort "team-ab".
def team_ab(
    *,
    a: int | ResourceQuota = 4,
    a_used: int = 4,
    b: int | ResourceQuota = 4,
    b_used: int = 4,
    b_cohort: str = "team-ab",
) -> dict[str, QueueQuota]:
    team_a = gpu_queue("team-a-cq", gpus=a, used=a_used, cohort="team-ab")
    team_b = gpu_queue("team-b-cq", gpus=b, used=b_used, cohort=b_cohort)
    return queues(team_a, team_b)


def waits_in_a(n: int = 4) -> list[Waiter]:
    return [a_waiter("w", "team-a-cq", gpus(n))]


IN_A_COHORT = [
    pytest.param(
        (
            team_ab(),
            [an_idle("b-idle", "team-b-cq", gpus=4)],
            waits_in_a(),
            {"b-idle": "w"},
            [SERVED],
        ),
        id="an-idle-workload-of-a-cohort-member-is-freed-when-the-waiter-may-borrow-its-quota",
    ),
    pytest.param(
        (
            team_ab(b_cohort="elsewhere"),
            [an_idle("b-idle", "team-b-cq", gpus=4)],
            waits_in_a(),
            {},
            [CANNOT],
        ),
        id="an-idle-workload-of-another-cohort-is-never-freed",
    ),
    pytest.param(
        (
            team_ab(a=quota(4, borrowing=0)),
            [an_idle("b-idle", "team-b-cq", gpus=4)],
            waits_in_a(),
            {},
            [CANNOT],
        ),
        id="a-waiter-whose-queue-may-not-borrow-gets-nothing-freed-in-the-cohort",
    ),
    pytest.param(
        (
            team_ab(a=quota(4, borrowing=2)),
            [an_idle("b-idle", "team-b-cq", gpus=4)],
            waits_in_a(2),
            {"b-idle": "w"},
            [SERVED],
        ),
        id="a-waiter-within-its-borrowing-limit-is-served-in-the-cohort",
    ),
    pytest.param(
        (
            team_ab(b=quota(4, lending=0)),
            [an_idle("b-idle", "team-b-cq", gpus=4)],
            waits_in_a(),
            {},
            [CANNOT],
        ),
        id="freeing-a-member-that-lends-nothing-does-not-help-so-it-stays",
    ),
    pytest.param(
        (
            team_ab(b=quota(4, lending=2)),
            [an_idle("b-idle", "team-b-cq", gpus=4)],
            waits_in_a(2),
            {"b-idle": "w"},
            [SERVED],
        ),
        id="freeing-a-member-helps-within-its-lending-limit",
    ),
    pytest.param(
        (
            team_ab(b=quota(4, lending=2)),
            [an_idle("b-idle", "team-b-cq", gpus=4)],
            waits_in_a(4),
            {},
            [CANNOT],
        ),
        id="freeing-a-member-gives-no-more-than-its-lending-limit",
    ),
    pytest.param(
        (
            team_ab(a=8, a_used=4, b=4, b_used=8),
            [
                an_idle("own", "team-a-cq", gpus=4, priority=0),
                an_idle("borrower", "team-b-cq", gpus=4, priority=5),
            ],
            waits_in_a(),
            {"borrower": "w"},
            [SERVED],
        ),
        id="an-idle-workload-of-a-queue-borrowing-beyond-its-nominal-quota-goes-first",
    ),
]


@pytest.mark.parametrize("row", IN_A_COHORT)
def test_a_cohort_member_is_freed_only_where_its_quota_can_be_borrowed(row: Row) -> None:
    plan = plan_of(row)
    assert freed_for(plan) == row[3], [r.reason for r in plan.waiters]
    assert [r.outcome for r in plan.waiters] == list(row[4]), [r.reason for r in plan.waiters]


def test_the_cpu_a_waiter_needs_decides_as_well_as_its_gpus() -> None:
    cq = a_queue("cq").group(a_flavor("a100", {GPU: 8, "cpu": 32_000}))
    cluster = queues(cq.using("a100", GPU, 8).using("a100", "cpu", 32_000))
    thin = an_idle("thin", "cq", gpus=4, other={"cpu": 2_000}, priority=0)
    fat = an_idle("fat", "cq", gpus=4, other={"cpu": 16_000}, priority=1)
    plan = plan_reclaim(
        [thin, fat],
        QueueFacts(queues=cluster, waiters=(a_waiter("w", "cq", {GPU: 4, "cpu": 8_000}),)),
    )
    assert freed_for(plan) == {"fat": "w"}


def group_of(plan: ReclaimPlan, ref: WorkloadRef) -> tuple[WorkloadRef, ...]:
    """Every candidate freed for the same waiter as `ref` (none when `ref` is not freed)."""
    return next((report.freed for report in plan.waiters if ref in report.freed), ())


def test_a_waiters_set_is_one_group_for_the_caps() -> None:
    plan = plan_of(
        (
            FULL,
            [an_idle("a", "cq", gpus=4), an_idle("b", "cq", gpus=4)],
            [a_waiter("w", "cq", gpus(8))],
            {},
            [],
        )
    )
    a, b, w = WorkloadRef(NS, "a"), WorkloadRef(NS, "b"), WorkloadRef(NS, "w")
    assert group_of(plan, a) == group_of(plan, b) == (a, b)
    assert plan.beneficiary_of(a) == plan.beneficiary_of(b) == Named(w, "cq")
    assert plan.beneficiary_of(WorkloadRef(NS, "busy")) is None
    assert group_of(plan, WorkloadRef(NS, "busy")) == ()


def test_a_waiter_whose_fit_is_unknown_gets_nothing_and_is_counted() -> None:
    cluster = queues(gpu_queue("cq", gpus=8, used=8).not_modelled("admission checks: provisioning"))
    facts = QueueFacts(queues=cluster, waiters=(a_waiter("w", "cq", gpus(4)),))
    plan = plan_reclaim([an_idle("idle", "cq", gpus=4)], facts)
    assert plan.reclaims == ()
    assert plan.count(UNKNOWN) == 1
    assert plan.waiters[0].reason == "ClusterQueue cq: admission checks: provisioning"


def test_a_waiter_of_an_unknown_queue_gets_nothing() -> None:
    facts = QueueFacts(queues=FULL, waiters=(a_waiter("w", "gone-cq", gpus(4)),))
    plan = plan_reclaim([an_idle("idle", "cq", gpus=4)], facts)
    assert (plan.reclaims, plan.waiters[0].outcome) == ((), UNKNOWN)


def test_no_data_about_waiters_frees_nothing_and_every_waiter_is_unknown() -> None:
    facts = QueueFacts(
        queues=FULL, waiters=(a_waiter("w", "cq", gpus(4)),), failure="visibility API timed out"
    )
    plan = plan_reclaim([an_idle("idle", "cq", gpus=4)], facts)
    assert plan.reclaims == ()
    assert plan.failure == "visibility API timed out"
    assert [(r.outcome, r.reason) for r in plan.waiters] == [
        (UNKNOWN, "no data about waiters: visibility API timed out")
    ]


def test_the_report_names_what_was_freed_and_why_it_fits() -> None:
    plan = plan_of((FULL, [an_idle("idle", "cq", gpus=4)], [a_waiter("w", "cq", gpus(4))], {}, []))
    assert plan.waiters[0].reason == f"freeing {NS}/idle: fits: flavor a100 for {GPU}"
    assert plan.waiters[0].freed == (WorkloadRef(NS, "idle"),)


def test_a_workload_becomes_a_candidate_with_what_its_admission_charges() -> None:
    built = a_workload(NS, "rc").gpu_pod("w-0", gpus=2).build()
    info = replace(
        built, cluster_queue="cq", cohort="team-ab", priority=3, admitted_usage={("a100", GPU): 2}
    )
    candidate = candidate_of(info, idle_since=info.created_at)
    assert candidate is not None
    assert (candidate.cluster_queue, candidate.cohort, candidate.priority, candidate.gpus) == (
        "cq",
        "team-ab",
        3,
        2,
    )
    assert candidate.usage == {("a100", GPU): 2}


def test_a_workload_without_a_cluster_queue_is_no_candidate() -> None:
    info = replace(a_workload(NS, "rc").gpu_pod("w-0").build(), cluster_queue=None)
    assert candidate_of(info, idle_since=info.created_at) is None
