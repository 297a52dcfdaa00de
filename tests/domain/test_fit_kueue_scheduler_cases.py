"""Kueue's quota fit as decision tables translated from Kueue's scheduler tests and from its
`isPreferred` tests (kubernetes-sigs/kueue at ff69552e). Each row names the test file and
case; its expectation is Kueue's admission in that case (admitted or not, the flavor of each
pod set's resources), or UNKNOWN where the model does not decide, with why.

Files: SCHED = pkg/scheduler/scheduler_test.go (TestSchedule), FA =
pkg/scheduler/flavorassigner/flavorassigner_test.go (TestIsPreferred). cpu in millicores.
TestSchedule's shared ClusterQueues are rebuilt below as `SHARED` (its queueing strategy,
StrictFIFO on some, orders waiters and does not change one waiter's fit). Where a case
admits several waiters in one cycle, the rows run them through the reclaim plan with nothing
to free: it takes them in order and charges each admission before the next, as Kueue's cycle
does; the non-borrowing waiter comes first there, as Kueue orders a cohort's entries.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from autoscaler.domain.queues.contention import WaiterOutcome, plan_reclaim
from autoscaler.domain.queues.facts import (
    TRY_NEXT_FLAVOR,
    AdmissionPolicy,
    FlavorQuotas,
    PodSet,
    QueueFacts,
    QueueQuota,
    ResourceGroup,
    Waiter,
)
from autoscaler.domain.queues.fit import FitOutcome, fit
from autoscaler.domain.queues.flavor_search import Granular, Mode, is_preferred
from autoscaler.domain.queues.placement import FlavorNodes
from tests.support.quota_builders import a_waiter, quota

FITS, NO, UNKNOWN = FitOutcome.FITS, FitOutcome.DOES_NOT_FIT, FitOutcome.UNKNOWN
SCHED = "scheduler_test.go"
FA = "flavorassigner_test.go"
GPU = "example.com/gpu"
CPU = 1000  # one cpu, in millicores
LOWER = "LowerPriority"
DEFAULTS = AdmissionPolicy()


def cq(
    name: str,
    *groups: tuple[FlavorQuotas, ...],
    cohort: str | None = None,
    policy: AdmissionPolicy = DEFAULTS,
    usage: dict[tuple[str, str], int] | None = None,
) -> QueueQuota:
    built = tuple(
        ResourceGroup(tuple(dict.fromkeys(r for f in g for r in f.resources)), g) for g in groups
    )
    return QueueQuota(name, cohort, built, dict(usage or {}), policy=policy)


def fq(name: str, nodes: FlavorNodes | None = None, **quotas: object) -> FlavorQuotas:
    """A flavor's quotas: a number is nominal cpus; (nominal, borrowing, lending) in cpus."""
    values = {}
    for resource, value in quotas.items():
        nominal, borrowing, lending = value if isinstance(value, tuple) else (value, None, None)
        unit = CPU if resource == "cpu" else 1
        values[resource.replace("_", "/").replace("example/com", "example.com")] = quota(
            nominal * unit,
            borrowing=None if borrowing is None else borrowing * unit,
            lending=None if lending is None else lending * unit,
        )
    return FlavorQuotas(name, values, nodes or FlavorNodes())


def shared(**usage: dict[tuple[str, str], int]) -> dict[str, QueueQuota]:
    """TestSchedule's ClusterQueues sales, eng-alpha, eng-beta, lend-a and lend-b, and the
    ResourceFlavors they name; `usage`: queue -> (flavor, resource) -> used."""
    queues = [
        cq("sales", (fq("default", cpu=(50, 0, None)),)),
        cq(
            "eng-alpha",
            (fq("on-demand", cpu=(50, 50, None)), fq("spot", cpu=(100, 0, None))),
            cohort="eng",
        ),
        cq(
            "eng-beta",
            (fq("on-demand", cpu=(50, 10, None)), fq("spot", cpu=(0, 100, None))),
            (fq("model-a", example_com_gpu=(20, 0, None)),),
            cohort="eng",
            policy=AdmissionPolicy(within_cluster_queue=LOWER, reclaim_within_cohort="Any"),
        ),
        cq("lend-a", (fq("default", cpu=(3, None, 2)),), cohort="lend"),
        cq("lend-b", (fq("default", cpu=(2, None, 2)),), cohort="lend"),
    ]
    return {q.name: replace(q, usage=usage.get(q.name.replace("-", "_"), {})) for q in queues}


def ps(name: str, count: int, **per_pod: int) -> PodSet:
    """A pod set of `count` pods, each requesting `per_pod` (cpu in cpus)."""
    scale = {"cpu": CPU}
    requests = {
        r.replace("_", "/").replace("example/com", "example.com"): q * count * scale.get(r, 1)
        for r, q in per_pod.items()
    }
    return PodSet(name, count, requests)


@dataclass(frozen=True)
class Row:
    """One waiter of a case: its ClusterQueue and pod sets, Kueue's answer for it."""

    queue: str
    pod_sets: tuple[PodSet, ...]
    outcome: FitOutcome
    flavors: dict[str, dict[str, str]] = field(default_factory=dict)
    why: str = ""  # part of the reason; for UNKNOWN, why the model does not decide
    priority: int = 0


def waiter_of(name: str, row: Row, *, minutes_ago: float = 10) -> Waiter:
    total: dict[str, int] = {}
    for pod_set in row.pod_sets:
        for resource, qty in pod_set.requests.items():
            total[resource] = total.get(resource, 0) + qty
    built = a_waiter(name, row.queue, total, priority=row.priority, created_minutes_ago=minutes_ago)
    return replace(built, pod_sets=row.pod_sets)


def extra(*queues: QueueQuota) -> dict[str, QueueQuota]:
    return {q.name: q for q in queues}


POB = AdmissionPolicy(TRY_NEXT_FLAVOR, TRY_NEXT_FLAVOR, True, within_cluster_queue=LOWER)
BOP = replace(POB, preemption_over_borrowing=False)


def borrow_or_preempt(name: str, policy: AdmissionPolicy) -> dict[str, QueueQuota]:
    """The pob-/bop- queues: on-demand 5 (no borrowing), used 5 by a lower-priority workload;
    spot 0, borrowing up to 5 from a lender's 5."""
    return extra(
        cq(
            f"{name}-cq",
            (fq("on-demand", cpu=(5, 0, None)), fq("spot", cpu=(0, 5, None))),
            cohort=f"{name}-cohort",
            policy=policy,
            usage={("on-demand", "cpu"): 5 * CPU},
        ),
        cq(f"{name}-lender", (fq("on-demand", cpu=0), fq("spot", cpu=5)), cohort=f"{name}-cohort"),
    )


# source -> (the queues, the waiters in Kueue's order with Kueue's answer for each)
CASES: dict[str, tuple[dict[str, QueueQuota], tuple[Row, ...]]] = {
    f"{SCHED}: single clusterQueue full": (
        shared(sales={("default", "cpu"): 40 * CPU}),
        (Row("sales", (ps("one", 11, cpu=1),), NO, why="needs 11000 cpu in flavor default"),),
    ),
    # Kueue admits 25 of the 50 pods (partial admission); the count is not modelled.
    f"adapted from {SCHED}: partial admission single variable pod set, unknown where Kueue "
    "admits 25 of 50 (the count is not modelled)": (
        shared(),
        (
            Row(
                "sales",
                (replace(ps("one", 50, cpu=2), min_count=20),),
                UNKNOWN,
                why="partial admission (minCount of pod set one) is not modelled",
            ),
        ),
    ),
    f"{SCHED}: admit in same cohort with no borrowing": (
        shared(),
        (
            Row("eng-alpha", (ps("one", 40, cpu=1),), FITS, {"one": {"cpu": "on-demand"}}),
            Row("eng-beta", (ps("one", 40, cpu=1),), FITS, {"one": {"cpu": "on-demand"}}),
        ),
    ),
    f"{SCHED}: assign multiple resources and flavors": (
        shared(),
        (
            Row(
                "eng-beta",
                (ps("one", 10, cpu=6, example_com_gpu=1), ps("two", 40, cpu=1)),
                FITS,
                {"one": {"cpu": "on-demand", GPU: "model-a"}, "two": {"cpu": "spot"}},
            ),
        ),
    ),
    # Kueue chooses every waiter's flavors against the cycle's snapshot, then admits in
    # order: eng-beta's 56 were nominated on-demand (first row), and after eng-alpha's 45
    # "no longer fit" there, so it is left in the queue (not inadmissible) for the next
    # cycle. That cycle's assignment, against eng-alpha's usage, is what the plan computes
    # (second row): on-demand has 55 left, spot lends 100, so spot.
    f"{SCHED}: cannot borrow if cohort was assigned and would result in overadmission "
    "(the cycle's nomination for eng-beta)": (
        shared(),
        (Row("eng-beta", (ps("one", 56, cpu=1),), FITS, {"one": {"cpu": "on-demand"}}),),
    ),
    f"{SCHED}: cannot borrow if cohort was assigned and would result in overadmission": (
        shared(),
        (
            Row("eng-alpha", (ps("one", 45, cpu=1),), FITS, {"one": {"cpu": "on-demand"}}),
            Row("eng-beta", (ps("one", 56, cpu=1),), FITS, {"one": {"cpu": "spot"}}),
        ),
    ),
    f"{SCHED}: can borrow if cohort was assigned and will not result in overadmission": (
        shared(),
        (
            Row("eng-alpha", (ps("one", 45, cpu=1),), FITS, {"one": {"cpu": "on-demand"}}),
            Row("eng-beta", (ps("one", 55, cpu=1),), FITS, {"one": {"cpu": "on-demand"}}),
        ),
    ),
    f"{SCHED}: can borrow if needs reclaim from cohort in different flavor": (
        shared(eng_beta={("on-demand", "cpu"): 50 * CPU, ("spot", "cpu"): CPU}),
        (
            Row("eng-alpha", (ps("main", 1, cpu=100),), NO, why="99000 available"),
            Row("eng-beta", (ps("main", 1, cpu=1),), FITS, {"main": {"cpu": "on-demand"}}),
        ),
    ),
    f"{SCHED}: workload exceeds lending limit when borrow in cohort": (
        shared(lend_b={("default", "cpu"): 2 * CPU}),
        (Row("lend-b", (ps("main", 1, cpu=3),), NO, why="2000 available"),),
    ),
    f"{SCHED}: cannot borrow resource not listed in clusterQueue": (
        shared(),
        (Row("eng-alpha", (ps("main", 1, example_com_gpu=1),), NO, why="does not cover"),),
    ),
    f"{SCHED}: not enough resources to borrow, fallback to next flavor; "
    "WhenCanPreempt: TryNextFlavor": (
        shared(eng_beta={("on-demand", "cpu"): 45 * CPU}),
        (Row("eng-alpha", (ps("one", 60, cpu=1),), FITS, {"one": {"cpu": "spot"}}),),
    ),
    f"{SCHED}: workload should not fit in clusterQueue with nonexistent flavor": (
        extra(
            cq(
                "flavor-nonexistent-cq",
                (fq("nonexistent-flavor", FlavorNodes(missing=True), cpu=50),),
            )
        ),
        (Row("flavor-nonexistent-cq", (ps("main", 1, cpu=1),), NO, why="not found"),),
    ),
    f"{SCHED}: admit to second flavor when first needs preemption; WhenCanPreempt: TryNextFlavor": (
        extra(
            cq(
                "preempt-attempts-cq",
                (fq("on-demand", cpu=1), fq("spot", cpu=1)),
                policy=AdmissionPolicy(within_cluster_queue=LOWER),
                usage={("on-demand", "cpu"): CPU},
            )
        ),
        (
            Row(
                "preempt-attempts-cq",
                (ps("main", 1, cpu=1),),
                FITS,
                {"main": {"cpu": "spot"}},
                priority=100,
            ),
        ),
    ),
    f"{SCHED}: don't assign flavor if there are no candidates for preemption": (
        extra(
            cq(
                "cq1",
                (fq("on-demand", cpu=(0, 1, None)), fq("spot", cpu=(0, 1, None))),
                cohort="cohort",
                policy=AdmissionPolicy(
                    within_cluster_queue=LOWER,
                    reclaim_within_cohort="Any",
                    borrow_within_cohort=LOWER,
                ),
            ),
            cq(
                "cq2",
                (fq("on-demand", cpu=1), fq("spot", cpu=1)),
                cohort="cohort",
                usage={("on-demand", "cpu"): CPU},
            ),
        ),
        (Row("cq1", (ps("main", 1, cpu=1),), FITS, {"main": {"cpu": "spot"}}, priority=100),),
    ),
    f"{SCHED}: BorrowingOverPreemption preference: borrow in second flavor instead of "
    "preempting in first": (
        borrow_or_preempt("bop", BOP),
        (Row("bop-cq", (ps("main", 1, cpu=5),), FITS, {"main": {"cpu": "spot"}}),),
    ),
    # Kueue: preempts low-pob (priority -1) in on-demand. Whether the admitted workload is a
    # candidate depends on its priority, which the quotas do not carry: unknown.
    f"adapted from {SCHED}: PreemptionOverBorrowing preference: preempt in first flavor "
    "instead of borrowing in second, unknown where Kueue preempts (priorities not carried)": (
        borrow_or_preempt("pob", POB),
        (
            Row(
                "pob-cq",
                (ps("main", 1, cpu=5),),
                UNKNOWN,
                why="Kueue would simulate preemption for cpu in flavor on-demand",
            ),
        ),
    ),
    # Kueue: spot, the admitted workload having the waiter's priority (no candidate). Same
    # reason for unknown as above. (The case's hierarchy, a root Cohort holding spot 5, is
    # flattened into a lender ClusterQueue; the adapter marks a real hierarchy unmodelled.)
    f"adapted from {SCHED}: PreemptionOverBorrowing preference: select fitting second flavor "
    "over first flavor with no preemption candidates, its root Cohort flattened into a lender "
    "ClusterQueue, unknown where Kueue picks spot": (
        extra(
            cq(
                "nopc-cq",
                (fq("on-demand", cpu=(5, 0, None)), fq("spot", cpu=0)),
                cohort="nopc",
                policy=POB,
                usage={("on-demand", "cpu"): 5 * CPU},
            ),
            cq("nopc-sibling", (fq("on-demand", cpu=5), fq("spot", cpu=0)), cohort="nopc"),
            cq("nopc-root", (fq("on-demand", cpu=0), fq("spot", cpu=5)), cohort="nopc"),
        ),
        (
            Row(
                "nopc-cq",
                (ps("main", 1, cpu=5),),
                UNKNOWN,
                why="Kueue would simulate preemption for cpu in flavor on-demand",
            ),
        ),
    ),
    # Kueue: spot, the admitted workload having the waiter's priority. Unknown for the same
    # reason: whenCanPreempt MayStopSearch stops at on-demand if it finds a candidate.
    f"adapted from {SCHED}: use second flavor when the first has no preemption candidates; "
    "WhenCanPreempt: MayStopSearch, unknown where Kueue picks spot": (
        extra(
            cq(
                "other-alpha",
                (fq("on-demand", cpu=(50, 50, None)), fq("spot", cpu=(100, 0, None))),
                policy=AdmissionPolicy(
                    when_can_preempt="MayStopSearch", within_cluster_queue=LOWER
                ),
                usage={("on-demand", "cpu"): 50 * CPU},
            )
        ),
        (
            Row(
                "other-alpha",
                (ps("main", 1, cpu=20),),
                UNKNOWN,
                why="Kueue would simulate preemption for cpu in flavor on-demand",
            ),
        ),
    ),
}


@pytest.mark.parametrize("source", CASES)
def test_kueue_scheduler_cases(source: str) -> None:
    queues, rows = CASES[source]
    waiters = [waiter_of(f"w{i}", row, minutes_ago=10 - i) for i, row in enumerate(rows)]

    plan = plan_reclaim([], QueueFacts(queues=queues, waiters=tuple(waiters)))

    for row, waiter, report in zip(rows, waiters, plan.waiters, strict=True):
        assert report.waiter == waiter.ref
        assert report.outcome is ANSWERS[row.outcome], report.reason
        assert row.why in report.reason
        for flavors in row.flavors.values():
            for resource, flavor in flavors.items():
                assert f"flavor {flavor} for {resource}" in report.reason
    assert plan.reclaims == ()


ANSWERS = {
    FITS: WaiterOutcome.FITS_ALREADY,
    NO: WaiterOutcome.CANNOT_FIT,
    UNKNOWN: WaiterOutcome.FIT_UNKNOWN,
}


@pytest.mark.parametrize(
    "source", [source for source, (_, rows) in CASES.items() if len(rows) == 1]
)
def test_a_lone_waiters_flavor_per_pod_set(source: str) -> None:
    queues, (row,) = CASES[source]

    result = fit(waiter_of("w", row), queues)

    assert result.outcome is row.outcome, result.reason
    assert {k: dict(v) for k, v in result.pod_sets.items()} == row.flavors


# FA TestIsPreferred: every case, on the model's `is_preferred` (modes and borrowing levels
# as the case gives them; no preference set is BorrowingOverPreemption, as in Kueue).
NO_FIT, NO_CANDIDATES, PREEMPT, FIT = Mode.NO_FIT, Mode.NO_CANDIDATES, Mode.PREEMPT, Mode.FIT
PREFERENCE_CASES = [
    ("feature gate disabled prioritises preemption", (FIT, 0), (PREEMPT, 0), False, True),
    (
        "explicit BorrowingOverPreemption prioritises borrowing distance",
        (PREEMPT, 1),
        (FIT, 2),
        False,
        False,
    ),
    (
        "explicit PreemptionOverBorrowing prioritises lower preemption",
        (PREEMPT, 1),
        (FIT, 2),
        True,
        True,
    ),
    (
        "explicit PreemptionOverBorrowing breaks borrowing ties with preemption",
        (PREEMPT, 1),
        (FIT, 1),
        True,
        False,
    ),
    (
        "explicit PreemptionOverBorrowing rejects no-candidate flavor before borrowing comparison",
        (NO_CANDIDATES, 1),
        (FIT, 2),
        True,
        False,
    ),
    (
        "explicit PreemptionOverBorrowing prefers fit over shallower-borrowing no-candidate flavor",
        (FIT, 2),
        (NO_CANDIDATES, 1),
        True,
        True,
    ),
    (
        "no-candidate flavor remains preferable to no-fit flavor",
        (NO_CANDIDATES, 1),
        (NO_FIT, 0),
        False,
        True,
    ),
    (
        "no-fit flavor remains worse than no-candidate flavor",
        (NO_FIT, 0),
        (NO_CANDIDATES, 1),
        False,
        False,
    ),
    (
        "no-candidate flavors retain borrowing preference",
        (NO_CANDIDATES, 1),
        (NO_CANDIDATES, 2),
        True,
        True,
    ),
    (
        "no-candidate flavors retain borrowing preference in reverse",
        (NO_CANDIDATES, 2),
        (NO_CANDIDATES, 1),
        True,
        False,
    ),
]


@pytest.mark.parametrize(
    ("a", "b", "preemption_over_borrowing", "preferred"),
    [case[1:] for case in PREFERENCE_CASES],
    ids=[f"{FA}: {case[0]}" for case in PREFERENCE_CASES],
)
def test_kueue_is_preferred_cases(
    a: tuple[Mode, int], b: tuple[Mode, int], preemption_over_borrowing: bool, preferred: bool
) -> None:
    policy = AdmissionPolicy(preemption_over_borrowing=preemption_over_borrowing)

    assert is_preferred(Granular(*a), Granular(*b), policy) is preferred
