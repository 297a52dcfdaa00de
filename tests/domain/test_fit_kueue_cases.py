"""Kueue's quota fit as decision tables translated from Kueue's own unit tests
(kubernetes-sigs/kueue at ff69552e). Each row names the test file and case; its expectation
is Kueue's answer in that case (the flavor of each pod set's resources, the charge per
(flavor, resource), or no fit), or UNKNOWN where the model does not decide and says why.

Files: FA = pkg/scheduler/flavorassigner/flavorassigner_test.go (TestAssignFlavors),
RES = pkg/cache/scheduler/resource_test.go (TestAvailable), PF = pkg/scheduler/preemption/
preemption_fair_test.go (TestFairPreemptions: the waiter is its "incoming", in its
"targetCQ"; Kueue preempting its "wantPreempted" means Kueue does not admit it without
preempting, an answer the model gives as unknown). cpu in millicores.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from autoscaler.domain.queues.facts import (
    TRY_NEXT_FLAVOR,
    AdmissionPolicy,
    FlavorQuotas,
    PodSet,
    QueueQuota,
    ResourceQuota,
)
from autoscaler.domain.queues.fit import FitOutcome, fit
from autoscaler.domain.queues.placement import (
    FlavorNodes,
    NodeRequirement,
    Placement,
    Taint,
    Toleration,
)
from tests.support.quota_builders import a_queue, a_waiter, queues, quota

FITS, NO, UNKNOWN = FitOutcome.FITS, FitOutcome.DOES_NOT_FIT, FitOutcome.UNKNOWN
FA = "flavorassigner_test.go"
RES = "resource_test.go"
PF = "preemption_fair_test.go"
SPOT = Taint("instance", "spot", "NoSchedule")
SPOT_OK = Toleration("instance", "Equal", "spot", "NoSchedule")
TRY_NEXT = AdmissionPolicy(when_can_borrow=TRY_NEXT_FLAVOR, when_can_preempt=TRY_NEXT_FLAVOR)
STOP = AdmissionPolicy()  # MayStopSearch for borrowing, TryNextFlavor for preemption
STOP_BOTH = replace(STOP, when_can_preempt="MayStopSearch")


def flavor(
    name: str, nodes: FlavorNodes | None = None, **resources: int | ResourceQuota
) -> FlavorQuotas:
    quotas = {r: v if isinstance(v, ResourceQuota) else quota(v) for r, v in resources.items()}
    return FlavorQuotas(name, quotas, nodes or FlavorNodes())


LABELLED = {n: FlavorNodes(labels={"type": n}) for n in ("one", "two")}
TAINTED = FlavorNodes(taints=(SPOT,))
LABELLED_PAIR = (flavor("one", LABELLED["one"], cpu=4000), flavor("two", LABELLED["two"], cpu=4000))


@dataclass(frozen=True)
class Case:
    """One translated case: the waiter's ClusterQueue "cq" (and cohort members), its pod
    sets, and Kueue's answer: pod set -> resource -> flavor for a fit, else the outcome."""

    source: str
    groups: tuple[tuple[FlavorQuotas, ...], ...]
    pod_sets: tuple[PodSet, ...]
    outcome: FitOutcome
    flavors: dict[str, dict[str, str]] = field(default_factory=dict)
    charge: dict[tuple[str, str], int] = field(default_factory=dict)
    policy: AdmissionPolicy = STOP
    cohort: tuple[QueueQuota, ...] = ()
    usage: dict[tuple[str, str], int] = field(default_factory=dict)
    why: str = ""  # for UNKNOWN: why the model does not decide; else part of the reason
    fair_sharing: bool = False  # Kueue's Configuration turns fair sharing on

    def cluster(self) -> dict[str, QueueQuota]:
        cq = a_queue("cq", cohort="c" if self.cohort else None)
        for group in self.groups:
            cq.group(*group)
        built = replace(cq.build(), usage=dict(self.usage), policy=self.policy)
        every = (built, *self.cohort)
        return queues(*(replace(q, fair_sharing=self.fair_sharing) for q in every))


def ps(name: str, count: int, placement: Placement | None = None, **requests: int) -> PodSet:
    return PodSet(name, count, requests, placement or Placement())


def member(
    name: str, *flavors: FlavorQuotas, used: dict[tuple[str, str], int] | None = None
) -> QueueQuota:
    built = a_queue(name, cohort="c").group(*flavors).build()
    return replace(built, usage=used or {})


# Fair sharing lets a queue whose reclaimWithinCohort is not Never preempt while borrowing
# (flavorassigner.go `canPreemptWhileBorrowing`), which it cannot without fair sharing.
FS_RECLAIM = replace(STOP_BOTH, reclaim_within_cohort="Any")
PF_POLICY = AdmissionPolicy(within_cluster_queue="LowerPriority", reclaim_within_cohort="Any")
UNIT = 1000


def pf_cohort(**used: int) -> tuple[QueueQuota, ...]:
    """TestFairPreemptions' "b" and "c" beside the waiter's "a" ("cq" here): 3 cpu each in
    "default"; `used` is what each one's admitted unit workloads take."""
    return tuple(
        member(name, flavor("default", cpu=3 * UNIT), used={("default", "cpu"): qty})
        for name, qty in used.items()
    )


def zero_nominal_borrower() -> tuple[QueueQuota, ...]:
    """The last two zero-weight cases' "b" (nominal 0, b1..b3 admitted: 3 cpu); the root
    Cohort's own 3 cpu are lent by "root-quota", a member without waiters (for a flat
    cohort's root both count the same: resource_node.go `accumulateFromChild`)."""
    borrower = member("b", flavor("default", cpu=0), used={("default", "cpu"): 3 * UNIT})
    return borrower, member("root-quota", flavor("default", cpu=3 * UNIT))


FAIR_SHARING_CASES = [
    Case(
        f"{FA}: when borrowing while preemption is needed for flavor one, fair sharing enabled, "
        "reclaimWithinCohort=Any (Kueue: Preempt in flavor one; the case's oracle answers "
        "Preempt, so here a member borrows flavor one for the simulation to pick)",
        ((flavor("one", cpu=0), flavor("two", cpu=12 * UNIT)),),
        (ps("main", 1, cpu=12 * UNIT),),
        UNKNOWN,
        policy=FS_RECLAIM,
        cohort=(
            member("test-secondary-clusterqueue", flavor("one", cpu=12 * UNIT)),
            member("borrower", flavor("one", cpu=0), used={("one", "cpu"): 2 * UNIT}),
        ),
        why="Kueue would simulate preemption for cpu in flavor one",
        fair_sharing=True,
    ),
    Case(
        f"{FA}: when borrowing while preemption is needed for flavor one, fair sharing enabled, "
        "reclaimWithinCohort=Never (Kueue: NoFit in flavor one, Fit in flavor two)",
        ((flavor("one", cpu=0), flavor("two", cpu=12 * UNIT)),),
        (ps("main", 1, cpu=12 * UNIT),),
        FITS,
        {"main": {"cpu": "two"}},
        policy=STOP_BOTH,
        cohort=(
            member(
                "test-secondary-clusterqueue",
                flavor("one", cpu=12 * UNIT),
                used={("one", "cpu"): 10 * UNIT},
            ),
        ),
        fair_sharing=True,
    ),
    Case(
        f"{FA}: the same (reclaimWithinCohort=Never) with a borrowing member: fair sharing "
        "alone does not make Kueue simulate preemption while borrowing",
        ((flavor("one", cpu=0), flavor("two", cpu=12 * UNIT)),),
        (ps("main", 1, cpu=12 * UNIT),),
        FITS,
        {"main": {"cpu": "two"}},
        policy=STOP_BOTH,
        cohort=(
            member("test-secondary-clusterqueue", flavor("one", cpu=12 * UNIT)),
            member("borrower", flavor("one", cpu=0), used={("one", "cpu"): 2 * UNIT}),
        ),
        fair_sharing=True,
    ),
    Case(
        f"{PF}: CQ with higher weight can preempt more (Kueue preempts b1 and b2 for the "
        "borrowing a_incoming)",
        ((flavor("default", cpu=3 * UNIT),),),
        (ps("main", 1, cpu=2 * UNIT),),
        UNKNOWN,
        policy=PF_POLICY,
        cohort=pf_cohort(b=6 * UNIT, c=0),
        usage={("default", "cpu"): 3 * UNIT},
        why="Kueue would simulate preemption for cpu in flavor default",
        fair_sharing=True,
    ),
    Case(
        f"{PF}: zero weight borrowing preemptor cannot preempt from a borrowing CQ with a "
        "non-zero weight (Kueue preempts nothing: its strategies refuse, which the model "
        "does not compute, so unknown rather than a guess)",
        ((flavor("default", cpu=UNIT),),),
        (ps("main", 1, cpu=UNIT),),
        UNKNOWN,
        policy=AdmissionPolicy(reclaim_within_cohort="Any"),
        cohort=(member("b", flavor("default", cpu=UNIT), used={("default", "cpu"): 2 * UNIT}),),
        usage={("default", "cpu"): UNIT},
        why="Kueue would simulate preemption for cpu in flavor default",
        fair_sharing=True,
    ),
    Case(
        f"{PF}: non-zero weight borrowing preemptor preempts from a borrowing CQ (Kueue "
        "preempts b1 for a_incoming, 2 cpu over a's nominal 1)",
        ((flavor("default", cpu=UNIT),),),
        (ps("main", 1, cpu=2 * UNIT),),
        UNKNOWN,
        policy=AdmissionPolicy(reclaim_within_cohort="Any"),
        cohort=zero_nominal_borrower(),
        why="Kueue would simulate preemption for cpu in flavor default",
        fair_sharing=True,
    ),
    Case(
        f"{PF}: zero weight borrowing preemptor can preempt from a borrowing CQ which also "
        "has zero weight (Kueue preempts b1; the weights do not change the fit)",
        ((flavor("default", cpu=UNIT),),),
        (ps("main", 1, cpu=2 * UNIT),),
        UNKNOWN,
        policy=AdmissionPolicy(reclaim_within_cohort="Any"),
        cohort=zero_nominal_borrower(),
        why="Kueue would simulate preemption for cpu in flavor default",
        fair_sharing=True,
    ),
    Case(
        "flavorassigner.go canPreemptWhileBorrowing: the same queues without fair sharing "
        "(reclaimWithinCohort Any, no borrowWithinCohort): Kueue does not simulate preemption "
        "while borrowing, and 2 cpu do not fit the 1 left",
        ((flavor("default", cpu=UNIT),),),
        (ps("main", 1, cpu=2 * UNIT),),
        NO,
        policy=AdmissionPolicy(reclaim_within_cohort="Any"),
        cohort=zero_nominal_borrower(),
        why="needs 2000 cpu in flavor default, 1000 available",
    ),
]

CASES = [
    Case(
        f"{FA}: single flavor, fits tainted flavor with toleration",
        ((flavor("tainted", TAINTED, cpu=4000),),),
        (ps("main", 1, Placement(tolerations=(SPOT_OK,)), cpu=1000),),
        FITS,
        {"main": {"cpu": "tainted"}},
        {("tainted", "cpu"): 1000},
    ),
    Case(
        f"{FA}: single flavor, fits tainted flavor (the flavor's own toleration)",
        ((flavor("t", FlavorNodes(taints=(SPOT,), tolerations=(SPOT_OK,)), cpu=4000),),),
        (ps("main", 1, cpu=1000),),
        FITS,
        {"main": {"cpu": "t"}},
    ),
    Case(
        "flavorassigner.go checkFlavorForPodSets calls FindMatchingUntoleratedTaint with the "
        "comparison operators on: a Gt toleration tolerates a larger integer taint",
        (
            (
                flavor("tier", FlavorNodes(taints=(Taint("tier", "5", "NoSchedule"),)), cpu=4000),
                flavor("other", cpu=4000),
            ),
        ),
        (ps("main", 1, Placement(tolerations=(Toleration("tier", "Gt", "3"),)), cpu=1000),),
        FITS,
        {"main": {"cpu": "tier"}},
    ),
    Case(
        "the same with Lt: the taint's 5 is not below 3, so the flavor is skipped",
        (
            (
                flavor("tier", FlavorNodes(taints=(Taint("tier", "5", "NoSchedule"),)), cpu=4000),
                flavor("other", cpu=4000),
            ),
        ),
        (ps("main", 1, Placement(tolerations=(Toleration("tier", "Lt", "3"),)), cpu=1000),),
        FITS,
        {"main": {"cpu": "other"}},
    ),
    Case(
        f"{FA}: multiple flavors, fits while skipping tainted flavor",
        ((flavor("tainted", TAINTED, cpu=4000), flavor("two", LABELLED["two"], cpu=4000)),),
        (ps("main", 1, cpu=3000),),
        FITS,
        {"main": {"cpu": "two"}},
        {("two", "cpu"): 3000},
    ),
    Case(
        f"{FA}: multiple flavors, fits a node selector (keys no flavor has are ignored)",
        (LABELLED_PAIR,),
        (
            ps(
                "main",
                1,
                Placement(
                    node_selector={"type": "two", "ignored1": "foo"},
                    affinity_terms=((NodeRequirement("ignored2", "In", ("bar",)),),),
                ),
                cpu=1000,
            ),
        ),
        FITS,
        {"main": {"cpu": "two"}},
    ),
    Case(
        f"{FA}: multiple flavors, fits with node affinity",
        (LABELLED_PAIR,),
        (
            ps(
                "main",
                1,
                Placement(affinity_terms=((NodeRequirement("type", "In", ("two",)),),)),
                cpu=1000,
            ),
        ),
        FITS,
        {"main": {"cpu": "two"}},
    ),
    Case(
        f"{FA}: multiple flavors, doesn't fit node affinity",
        (LABELLED_PAIR,),
        (
            ps(
                "main",
                1,
                Placement(affinity_terms=((NodeRequirement("type", "In", ("three",)),),)),
                cpu=1000,
            ),
        ),
        NO,
        why="doesn't match node affinity",
    ),
    Case(
        f"{FA}: multiple specs, fit different flavors (the worker counts the driver's usage)",
        ((flavor("one", cpu=4000), flavor("two", cpu=10_000)),),
        (ps("driver", 1, cpu=5000), ps("worker", 1, cpu=3000)),
        FITS,
        {"driver": {"cpu": "two"}, "worker": {"cpu": "one"}},
        {("one", "cpu"): 3000, ("two", "cpu"): 5000},
    ),
    Case(
        f"{FA}: num pods fit",
        ((flavor("default", cpu=10_000, pods=3),),),
        (ps("main", 3, cpu=3000),),
        FITS,
        {"main": {"cpu": "default", "pods": "default"}},
        {("default", "cpu"): 3000, ("default", "pods"): 3},
    ),
    Case(
        f"{FA}: num pods don't fit",
        ((flavor("default", cpu=10_000, pods=2),),),
        (ps("main", 3, cpu=3000),),
        NO,
        why="needs 3 pods in flavor default",
    ),
    Case(
        f"{FA}: borrow try next flavor, found the first flavor",
        (
            (
                flavor("one", cpu=quota(10_000, borrowing=1000), pods=10),
                flavor("two", cpu=1000, pods=10),
            ),
        ),
        (ps("main", 1, cpu=9000),),
        FITS,
        {"main": {"cpu": "one", "pods": "one"}},
        {("one", "cpu"): 9000, ("one", "pods"): 1},
        policy=TRY_NEXT,
        cohort=(member("other", flavor("one", cpu=1000)),),
        usage={("one", "cpu"): 2000},
    ),
    Case(
        f"{FA}: lend try next flavor, found the second flavor",
        (
            (
                flavor("one", cpu=quota(10_000, lending=1000), pods=10),
                flavor("two", cpu=quota(10_000, lending=0), pods=10),
            ),
        ),
        (ps("main", 1, cpu=9000),),
        FITS,
        {"main": {"cpu": "two", "pods": "two"}},
        {("two", "cpu"): 9000, ("two", "pods"): 1},
        policy=TRY_NEXT,
        cohort=(member("other", flavor("one", cpu=1000)),),
        usage={("one", "cpu"): 2000},
    ),
    Case(
        f"{FA}: borrow before try next flavor (whenCanBorrow MayStopSearch stays in flavor one)",
        (
            (
                flavor("one", cpu=quota(10_000, borrowing=1000), pods=10),
                flavor("two", cpu=10_000, pods=10),
            ),
        ),
        (ps("main", 1, cpu=9000),),
        FITS,
        {"main": {"cpu": "one", "pods": "one"}},
        policy=STOP,
        cohort=(member("other", flavor("one", cpu=1000)),),
        usage={("one", "cpu"): 2000},
    ),
    Case(
        f"{FA}: preempt before try next flavor; using WhenCanBorrow=MayStopSearch,"
        "WhenCanPreempt=MayStopSearch (Kueue: Preempt in flavor one)",
        ((flavor("one", cpu=10_000, pods=10), flavor("two", cpu=10_000, pods=10)),),
        (ps("main", 1, cpu=9000),),
        UNKNOWN,
        policy=replace(STOP_BOTH, within_cluster_queue="LowerPriority"),
        usage={("one", "cpu"): 2000},
        why="Kueue would simulate preemption for cpu in flavor one",
    ),
    Case(
        f"{FA}: preempt try next flavor (whenCanPreempt TryNextFlavor: flavor two fits)",
        ((flavor("one", cpu=10_000, pods=10), flavor("two", cpu=10_000, pods=10)),),
        (ps("main", 1, cpu=9000),),
        FITS,
        {"main": {"cpu": "two", "pods": "two"}},
        policy=replace(TRY_NEXT, within_cluster_queue="LowerPriority"),
        usage={("one", "cpu"): 2000},
    ),
    Case(
        f"{FA}: cannot preempt in cohort (oracle returns None) for the first flavor, tries the "
        "second flavor (which fits): no candidate under policies Never",
        ((flavor("one", cpu=10_000, pods=10), flavor("two", cpu=10_000, pods=10)),),
        (ps("main", 1, cpu=9000),),
        FITS,
        {"main": {"cpu": "two", "pods": "two"}},
        policy=STOP_BOTH,
        usage={("one", "cpu"): 2000},
    ),
    Case(
        f"{FA}: resource not listed in clusterQueue",
        ((flavor("one", cpu=4000),),),
        (ps("main", 1, cpu=1000, memory=1),),
        NO,
        why="does not cover memory",
    ),
    Case(
        f"{FA}: zero resource request not in clusterQueue should succeed",
        ((flavor("one", cpu=4000),),),
        (ps("main", 1, cpu=1000, memory=0),),
        FITS,
        {"main": {"cpu": "one"}},
    ),
    Case(
        f"{FA}: multiple flavors, skip missing ResourceFlavor",
        ((flavor("nonexistent", FlavorNodes(missing=True), cpu=4000), flavor("two", cpu=4000)),),
        (ps("main", 1, cpu=3000),),
        FITS,
        {"main": {"cpu": "two"}},
    ),
    Case(
        "partial admission (spec.podSets[].minCount) is not modelled: Kueue may admit fewer pods",
        ((flavor("default", cpu=2000),),),
        (PodSet("main", 3, {"cpu": 3000}, min_count=1),),
        UNKNOWN,
        why="partial admission",
    ),
    Case(
        "partial admission goes no lower than minCount (scheduler.go, PodSetReducer): when "
        "even the minCount pods do not fit, Kueue does not admit",
        ((flavor("default", cpu=2000),),),
        (PodSet("main", 3, {"cpu": 9000}, min_count=1),),
        NO,
        why="not even with the minCount pods",
    ),
    Case(
        "the same where no flavor's taints are tolerated: no count fits",
        ((flavor("tainted", TAINTED, cpu=8000),),),
        (PodSet("main", 3, {"cpu": 3000}, min_count=1),),
        NO,
        why="untolerated taint",
    ),
]


@pytest.mark.parametrize("case", CASES + FAIR_SHARING_CASES, ids=lambda c: c.source)
def test_kueue_flavor_assigner_cases(case: Case) -> None:
    waiter = replace(a_waiter("w", "cq", {}), pod_sets=case.pod_sets)
    result = fit(waiter, case.cluster())
    assert result.outcome is case.outcome, result.reason
    if case.outcome is FITS:
        assert {k: dict(v) for k, v in result.pod_sets.items()} == case.flavors
        if case.charge:
            assert result.charge() == case.charge
    assert case.why in result.reason


# RES TestAvailable, in flat cohorts: a waiter of each ClusterQueue fits exactly the
# available quota Kueue's case expects, and one millicore more does not.
def available_rows() -> list[tuple[str, dict[str, QueueQuota], str, int]]:
    red = "red"

    def cq(name: str, q: ResourceQuota, used: int) -> QueueQuota:
        return member(name, FlavorQuotas(red, {"cpu": q}), used={(red, "cpu"): used})

    # Adapted, not Kueue's own numbers: Kueue's cases give the Cohort 10 cpu of its own, and a
    # Cohort with quota is not modelled here. The Cohort's quota is dropped and cq1's usage
    # lowered by the same 10 cpu, so the expected availability stays the one Kueue's case
    # asserts; the ids say "adapted from".
    # "lending and borrowing limits respected": cq1 uses 10 instead of 20, 4 left as in Kueue.
    limits = queues(
        cq("cq1", quota(10_000), 10_000),
        cq("cq2", quota(10_000, borrowing=2000), 10_000),
        cq("cq3", quota(10_000, lending=5000), 6000),
    )
    # "cq oversubscription spills into cohort": cq1 uses 21 instead of 31, the cohort is 11
    # short as in Kueue's case, which eats cq2's protected 10.
    spill = queues(cq("cq1", quota(10_000), 21_000), cq("cq2", quota(10_000, lending=0), 0))
    limits_case = f"adapted from {RES} lending and borrowing limits respected"
    spill_case = f"adapted from {RES} cq oversubscription spills into cohort"
    why = "without the Cohort's own quota, cq1's usage lowered by it"
    return [
        (f"{limits_case} (cq1), {why}", limits, "cq1", 4000),
        (f"{limits_case} (cq2), {why}", limits, "cq2", 2000),
        (f"{limits_case} (cq3), {why}", limits, "cq3", 4000),
        (f"{spill_case} (cq1), {why}", spill, "cq1", 0),
        (f"{spill_case} (cq2), {why}", spill, "cq2", 0),
    ]


@pytest.mark.parametrize(
    ("cluster", "queue", "available"),
    [r[1:] for r in available_rows()],
    ids=[r[0] for r in available_rows()],
)
def test_kueue_available_quota(cluster: dict[str, QueueQuota], queue: str, available: int) -> None:
    if available:
        exact = fit(a_waiter("w", queue, {"cpu": available}), cluster)
        assert exact.outcome is FITS, exact.reason
    beyond = fit(a_waiter("w", queue, {"cpu": available + 1}), cluster)
    assert beyond.outcome is NO, beyond.reason
    assert f"{available} available" in beyond.reason
