"""Kueue's quota fit as decision tables, each built from an example of Kueue's own "Cluster
Queue" concept page (kueue.sigs.k8s.io/docs/concepts/cluster_queue/; the section is named
above each table), never from the simulator's quota code.

A row: the ClusterQueues, the waiter's ClusterQueue and requests, what is freed, and the
expected outcome with either the flavor of each requested resource (a fit) or a part of the
reason (no fit, unknown). cpu is in millicores and memory in bytes, Kueue's canonical units.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest

from autoscaler.domain.queues.facts import QueueQuota
from autoscaler.domain.queues.fit import NOTHING_FREED, FitOutcome, Freed, fit
from tests.support.quota_builders import GPU, a_flavor, a_queue, a_waiter, gpu_queue, queues, quota

CPU = 1000  # millicores
GI = 2**30
FITS, NO, UNKNOWN = FitOutcome.FITS, FitOutcome.DOES_NOT_FIT, FitOutcome.UNKNOWN
DEFAULT = "default-flavor"

Row = tuple[dict[str, QueueQuota], str, Mapping[str, int], Freed, FitOutcome, object]


def check(row: Row) -> None:
    cluster, queue_name, requests, freed, outcome, detail = row
    result = fit(a_waiter("w", queue_name, requests), cluster, freed)
    assert result.outcome is outcome, result.reason
    if outcome is FITS:
        assert dict(result.flavors) == detail, result.reason
    else:
        assert str(detail) in result.reason


# "Cluster Queue", the opening sample: cpu 9, memory 36Gi, pods 5 in "default-flavor".
def sample(*, cpu_used: int = 0) -> dict[str, QueueQuota]:
    resources = {"cpu": 9 * CPU, "memory": 36 * GI, "pods": 5}
    return queues(
        a_queue("cluster-queue").group(a_flavor(DEFAULT, resources)).using(DEFAULT, "cpu", cpu_used)
    )


ALL_DEFAULT = {"cpu": DEFAULT, "memory": DEFAULT, "pods": DEFAULT}
SAMPLE = [
    pytest.param(
        (
            sample(),
            "cluster-queue",
            {"cpu": 9 * CPU, "memory": 36 * GI, "pods": 5},
            NOTHING_FREED,
            FITS,
            ALL_DEFAULT,
        ),
        id="nine-cpus-36gi-and-five-pods-fit-the-sample-queue",
    ),
    pytest.param(
        (
            sample(),
            "cluster-queue",
            {"cpu": 10 * CPU},
            NOTHING_FREED,
            NO,
            "needs 10000 cpu in flavor default-flavor, 9000 available: "
            "nominal 9000, used 0, no cohort",
        ),
        id="ten-cpus-do-not-fit-a-nominal-quota-of-nine",
    ),
    pytest.param(
        (sample(), "cluster-queue", {"cpu": CPU, "pods": 6}, NOTHING_FREED, NO, "needs 6 pods"),
        id="six-pods-do-not-fit-five",
    ),
    pytest.param(
        (
            sample(cpu_used=5 * CPU),
            "cluster-queue",
            {"cpu": 5 * CPU},
            NOTHING_FREED,
            NO,
            "4000 available",
        ),
        id="what-admitted-workloads-use-is-not-available",
    ),
    pytest.param(
        (
            sample(),
            "cluster-queue",
            {"cpu": CPU, GPU: 1},
            NOTHING_FREED,
            NO,
            "does not cover nvidia.com/gpu",
        ),
        id="a-resource-the-queue-does-not-cover-never-fits",
    ),
    pytest.param(
        (sample(), "cluster-queue", {"cpu": CPU, GPU: 0}, NOTHING_FREED, FITS, {"cpu": DEFAULT}),
        id="a-zero-request-is-no-request",
    ),
]


# "Cluster Queue" > "Resource Groups": cpu, memory and pods in "spot" then "on-demand"; GPUs
# ("gpu" there, nvidia.com/gpu here) in "vendor1" then "vendor2", 10 each.
def grouped(*, vendor1_used: int = 0) -> dict[str, QueueQuota]:
    spot = a_flavor("spot", {"cpu": 9 * CPU, "memory": 36 * GI, "pods": 50})
    on_demand = a_flavor("on-demand", {"cpu": 18 * CPU, "memory": 72 * GI, "pods": 100})
    vendors = (a_flavor("vendor1", {GPU: 10}), a_flavor("vendor2", {GPU: 10}))
    queue = a_queue("cluster-queue").group(spot, on_demand).group(*vendors)
    return queues(queue.using("vendor1", GPU, vendor1_used))


GROUPS = [
    pytest.param(
        (grouped(), "cluster-queue", {"cpu": 9 * CPU}, NOTHING_FREED, FITS, {"cpu": "spot"}),
        id="cpu-that-fits-the-first-flavor-is-given-the-first-flavor",
    ),
    pytest.param(
        (grouped(), "cluster-queue", {"cpu": 10 * CPU}, NOTHING_FREED, FITS, {"cpu": "on-demand"}),
        id="cpu-beyond-the-first-flavor-is-given-the-next-flavor",
    ),
    pytest.param(
        (
            grouped(),
            "cluster-queue",
            {"cpu": CPU, "memory": 40 * GI},
            NOTHING_FREED,
            FITS,
            {"cpu": "on-demand", "memory": "on-demand"},
        ),
        id="memory-beyond-spot-takes-cpu-of-the-same-group-to-on-demand-too",
    ),
    pytest.param(
        (
            grouped(),
            "cluster-queue",
            {"cpu": 10 * CPU, GPU: 4},
            NOTHING_FREED,
            FITS,
            {"cpu": "on-demand", GPU: "vendor1"},
        ),
        id="gpus-and-cpu-get-their-flavors-from-their-own-groups",
    ),
    pytest.param(
        (
            grouped(vendor1_used=8),
            "cluster-queue",
            {"cpu": CPU, GPU: 4},
            NOTHING_FREED,
            FITS,
            {"cpu": "spot", GPU: "vendor2"},
        ),
        id="gpus-beyond-the-first-vendors-unused-quota-are-given-the-second-vendor",
    ),
    pytest.param(
        (
            grouped(vendor1_used=8),
            "cluster-queue",
            {GPU: 11},
            NOTHING_FREED,
            NO,
            "needs 11 nvidia.com/gpu in flavor vendor1, 2 available: "
            "nominal 10, used 8, no cohort; "
            "needs 11 nvidia.com/gpu in flavor vendor2, 10 available",
        ),
        id="gpus-beyond-every-flavor-do-not-fit-and-each-flavor-says-why",
    ),
    pytest.param(
        (
            grouped(),
            "cluster-queue",
            {"cpu": 19 * CPU, GPU: 1},
            NOTHING_FREED,
            NO,
            "needs 19000 cpu in flavor on-demand",
        ),
        id="gpus-that-fit-do-not-help-when-cpu-fits-no-flavor",
    ),
]


@pytest.mark.parametrize("row", SAMPLE + GROUPS)
def test_a_queue_alone_admits_within_its_flavors_in_order(row: Row) -> None:
    check(row)


# "Cluster Queue" > "Cohort" > "Borrowing example": team-a-cq (9 cpus, 36Gi) and team-b-cq
# (12 cpus, 48Gi) in cohort "team-ab".
def team_ab(
    *, b_used: int = 0, a_cohort: str | None = "team-ab", b_flavor: str = DEFAULT
) -> dict[str, QueueQuota]:
    team_a = a_queue("team-a-cq", cohort=a_cohort).group(
        a_flavor(DEFAULT, {"cpu": 9 * CPU, "memory": 36 * GI})
    )
    team_b = a_queue("team-b-cq", cohort="team-ab").group(
        a_flavor(b_flavor, {"cpu": 12 * CPU, "memory": 48 * GI})
    )
    return queues(team_a, team_b.using(b_flavor, "cpu", b_used))


BORROWING = [
    pytest.param(
        (
            team_ab(),
            "team-a-cq",
            {"cpu": 21 * CPU, "memory": 84 * GI},
            NOTHING_FREED,
            FITS,
            {"cpu": DEFAULT, "memory": DEFAULT},
        ),
        id="team-a-borrows-team-bs-unused-quota-up-to-21-cpus-and-84gi",
    ),
    pytest.param(
        (
            team_ab(),
            "team-a-cq",
            {"cpu": 22 * CPU},
            NOTHING_FREED,
            NO,
            "needs 22000 cpu in flavor default-flavor, 21000 available: "
            "nominal 9000, used 0, cohort lends 12000",
        ),
        id="22-cpus-are-more-than-the-cohort-holds",
    ),
    pytest.param(
        (
            team_ab(b_used=12 * CPU),
            "team-a-cq",
            {"cpu": 10 * CPU},
            NOTHING_FREED,
            NO,
            "cohort lends 0",
        ),
        id="a-cohort-member-using-its-whole-nominal-quota-lends-nothing",
    ),
    pytest.param(
        (team_ab(a_cohort=None), "team-a-cq", {"cpu": 10 * CPU}, NOTHING_FREED, NO, "no cohort"),
        id="a-queue-without-a-cohort-cannot-borrow",
    ),
    pytest.param(
        (
            team_ab(b_flavor="spare"),
            "team-a-cq",
            {"cpu": 10 * CPU},
            NOTHING_FREED,
            NO,
            "9000 available",
        ),
        id="a-queue-borrows-only-in-flavors-it-defines",
    ),
]


# "Cluster Queue" > "BorrowingLimit": team-a-cq 9 cpus with borrowingLimit 1, team-b-cq 12.
# "Cluster Queue" > "LendingLimit": team-a-cq 9 cpus, team-b-cq 12 with lendingLimit 1.
def limited(
    *, borrowing: int | None = None, lending: int | None = None, b_used: int = 0
) -> dict[str, QueueQuota]:
    team_a = a_queue("team-a-cq", cohort="team-ab").group(
        a_flavor(DEFAULT, {"cpu": quota(9 * CPU, borrowing=borrowing)})
    )
    team_b = a_queue("team-b-cq", cohort="team-ab").group(
        a_flavor(DEFAULT, {"cpu": quota(12 * CPU, lending=lending)})
    )
    return queues(team_a, team_b.using(DEFAULT, "cpu", b_used))


ONE = 1 * CPU
LIMITS = [
    pytest.param(
        (
            limited(borrowing=ONE),
            "team-a-cq",
            {"cpu": 10 * CPU},
            NOTHING_FREED,
            FITS,
            {"cpu": DEFAULT},
        ),
        id="a-borrowing-limit-of-1-lets-team-a-reach-9-plus-1",
    ),
    pytest.param(
        (
            limited(borrowing=ONE),
            "team-a-cq",
            {"cpu": 11 * CPU},
            NOTHING_FREED,
            NO,
            "10000 available: nominal 9000, used 0, cohort lends 1000, borrowing limit 1000",
        ),
        id="team-a-cannot-borrow-beyond-its-borrowing-limit",
    ),
    pytest.param(
        (
            limited(borrowing=ONE),
            "team-b-cq",
            {"cpu": 21 * CPU},
            NOTHING_FREED,
            FITS,
            {"cpu": DEFAULT},
        ),
        id="team-b-without-a-borrowing-limit-can-use-12-plus-9",
    ),
    pytest.param(
        (
            limited(lending=ONE),
            "team-a-cq",
            {"cpu": 10 * CPU},
            NOTHING_FREED,
            FITS,
            {"cpu": DEFAULT},
        ),
        id="a-lending-limit-of-1-lets-team-a-reach-9-plus-1",
    ),
    pytest.param(
        (
            limited(lending=ONE),
            "team-a-cq",
            {"cpu": 11 * CPU},
            NOTHING_FREED,
            NO,
            "10000 available",
        ),
        id="team-a-cannot-borrow-beyond-team-bs-lending-limit",
    ),
    pytest.param(
        (
            limited(lending=ONE, b_used=11 * CPU),
            "team-a-cq",
            {"cpu": 10 * CPU},
            NOTHING_FREED,
            FITS,
            {"cpu": DEFAULT},
        ),
        id="team-b-using-at-most-12-minus-1-still-lends-its-1",
    ),
    pytest.param(
        (
            limited(lending=ONE, b_used=12 * CPU),
            "team-a-cq",
            {"cpu": 10 * CPU},
            NOTHING_FREED,
            NO,
            "cohort lends 0",
        ),
        id="team-b-using-its-whole-nominal-quota-lends-nothing",
    ),
    pytest.param(
        (
            limited(lending=ONE),
            "team-b-cq",
            {"cpu": 21 * CPU},
            NOTHING_FREED,
            FITS,
            {"cpu": DEFAULT},
        ),
        id="team-a-without-a-lending-limit-lends-all-so-team-b-can-use-9-plus-12",
    ),
]


@pytest.mark.parametrize("row", BORROWING + LIMITS)
def test_a_cohort_lends_and_borrows_within_its_limits(row: Row) -> None:
    check(row)


# The same examples with idle workloads freed: what they give back is unused again.
FREEING = [
    pytest.param(
        (
            team_ab(b_used=12 * CPU),
            "team-a-cq",
            {"cpu": 21 * CPU},
            {"team-b-cq": {(DEFAULT, "cpu"): 12 * CPU}},
            FITS,
            {"cpu": DEFAULT},
        ),
        id="freeing-team-bs-usage-returns-it-to-the-cohort",
    ),
    pytest.param(
        (
            limited(lending=ONE, b_used=12 * CPU),
            "team-a-cq",
            {"cpu": 10 * CPU},
            {"team-b-cq": {(DEFAULT, "cpu"): 1 * CPU}},
            FITS,
            {"cpu": DEFAULT},
        ),
        id="freeing-1-cpu-of-a-lender-at-its-nominal-quota-restores-its-lending",
    ),
    pytest.param(
        (
            limited(lending=ONE, b_used=12 * CPU),
            "team-a-cq",
            {"cpu": 11 * CPU},
            {"team-b-cq": {(DEFAULT, "cpu"): 12 * CPU}},
            NO,
            "10000 available",
        ),
        id="freeing-a-lender-entirely-gives-no-more-than-its-lending-limit",
    ),
    pytest.param(
        (
            queues(gpu_queue("cq", gpus=8, used=8)),
            "cq",
            {GPU: 4},
            {"cq": {("a100", GPU): 4}},
            FITS,
            {GPU: "a100"},
        ),
        id="freeing-the-waiters-own-queue-makes-room-in-its-nominal-quota",
    ),
    pytest.param(
        (
            queues(gpu_queue("cq", gpus=8, used=8)),
            "cq",
            {GPU: 4},
            {"other-cq": {("a100", GPU): 8}},
            NO,
            "0 available",
        ),
        id="freeing-a-queue-outside-the-cohort-does-not-help",
    ),
]


@pytest.mark.parametrize("row", FREEING)
def test_what_is_freed_counts_as_unused(row: Row) -> None:
    check(row)


def cohort_with(doubtful: str) -> dict[str, QueueQuota]:
    a = gpu_queue("team-a-cq", gpus=8, cohort="team-ab")
    b = gpu_queue("team-b-cq", gpus=8, cohort="team-ab")
    (a if doubtful == "team-a-cq" else b).not_modelled("admission checks: provisioning")
    return queues(a, b)


UNKNOWNS = [
    pytest.param(
        (
            cohort_with("team-a-cq"),
            "team-a-cq",
            {GPU: 1},
            NOTHING_FREED,
            UNKNOWN,
            "ClusterQueue team-a-cq: admission checks: provisioning",
        ),
        id="a-queue-whose-admission-cannot-be-modelled-is-unknown",
    ),
    pytest.param(
        (
            cohort_with("team-b-cq"),
            "team-a-cq",
            {GPU: 1},
            NOTHING_FREED,
            UNKNOWN,
            "ClusterQueue team-b-cq: admission checks: provisioning",
        ),
        id="a-cohort-member-whose-admission-cannot-be-modelled-makes-the-fit-unknown",
    ),
    pytest.param(
        (
            cohort_with("team-b-cq"),
            "elsewhere-cq",
            {GPU: 1},
            NOTHING_FREED,
            UNKNOWN,
            "ClusterQueue elsewhere-cq is not known",
        ),
        id="a-queue-that-is-not-known-is-unknown",
    ),
]


@pytest.mark.parametrize("row", UNKNOWNS)
def test_what_cannot_be_modelled_is_unknown_never_a_fit(row: Row) -> None:
    check(row)


def test_the_reason_gives_the_numbers_behind_a_shortfall() -> None:
    a100 = gpu_queue("team-a-cq", gpus=8, used=6, cohort="team-ab")
    full = gpu_queue("team-b-cq", gpus=4, used=4, cohort="team-ab")
    result = fit(a_waiter("w", "team-a-cq", {GPU: 4}), queues(a100, full))
    assert (
        result.reason
        == "needs 4 nvidia.com/gpu in flavor a100, 2 available: nominal 8, used 6, cohort lends 0"
    )


def test_a_fit_says_how_much_it_borrows_and_what_it_charges() -> None:
    result = fit(a_waiter("w", "team-a-cq", {"cpu": 10 * CPU}), limited(borrowing=ONE))
    assert result.fits
    assert dict(result.borrowing) == {(DEFAULT, "cpu"): 1 * CPU}
    assert result.charge() == {(DEFAULT, "cpu"): 10 * CPU}
    assert (
        result.reason == "fits: flavor default-flavor for cpu, borrowing 1000 cpu in default-flavor"
    )


def test_lent_quota_the_cohort_has_borrowed_is_not_available_to_its_owner() -> None:
    owner = gpu_queue("team-a-cq", gpus=quota(8, lending=8), used=6, cohort="team-ab")
    borrower = gpu_queue("team-b-cq", gpus=4, used=6, cohort="team-ab")
    result = fit(a_waiter("w", "team-a-cq", {GPU: 2}), queues(owner, borrower))
    assert result.outcome is NO
    assert (
        "0 available: nominal 8, used 6, cohort lends 0, 2 of its unused quota lent to the cohort"
        in result.reason
    )


def test_fair_sharing_leaves_the_fit_as_it_is_where_kueue_would_not_preempt() -> None:
    """Fair sharing changes which head Kueue serves first, not the quota arithmetic: a
    borrowing waiter fits, and one beyond what is left does not, as without it. Only a
    reclaimWithinCohort policy turns a shortfall into Kueue's preemption (test_fit_kueue_
    cases.py's fair sharing rows)."""
    lender = gpu_queue("team-b-cq", gpus=8, used=2, cohort="team-ab")
    borrower = gpu_queue("team-a-cq", gpus=8, used=8, cohort="team-ab")
    fair = {q.name: replace(q.build(), fair_sharing=True) for q in (lender, borrower)}
    fits = fit(a_waiter("w", "team-a-cq", {GPU: 6}), fair)
    short = fit(a_waiter("w", "team-a-cq", {GPU: 7}), fair)
    assert (fits.outcome, short.outcome) == (FITS, NO), (fits.reason, short.reason)
    assert dict(fits.borrowing) == {("a100", GPU): 6}
