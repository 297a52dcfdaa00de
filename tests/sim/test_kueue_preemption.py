"""The emulated Kueue's preemption against Kueue's own unit-test cases.

Every row's expected answer is copied from the Kueue test case it names (kubernetes-sigs/kueue
at ff69552e): which workloads Kueue preempts, and with which reason. The queues are those of
`defaultClusterQueues` in pkg/scheduler/preemption/preemption_test.go, TestPreemption (its
"standalone" queue's memory flavors left out: the rows request cpu only).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from autoscaler.domain.models import WorkloadRef
from autoscaler.sim import ClusterQueue, KueueState, LocalQueue, Phase, ResourceQuota, Workload
from autoscaler.sim.admission import admit_pending, ledger
from autoscaler.sim.kueue_model import Admission, KueueFeatures, PodSet
from autoscaler.sim.preemption import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAMATION,
    Target,
    preemption_targets,
    satisfies_policy,
)
from autoscaler.sim.quota import Preemption, PreemptionPolicy

from .builders import at

CPU = "cpu"
LOWER = PreemptionPolicy.LOWER_PRIORITY
NEWER_EQUAL = PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY
ANY = PreemptionPolicy.ANY
NEVER = PreemptionPolicy.NEVER
PREEMPTION_TEST = "pkg/scheduler/preemption/preemption_test.go TestPreemption"
POLICY_TEST = (
    "pkg/scheduler/preemption/common/preemption_policy_test.go TestSatisfiesPreemptionPolicy"
)
ORDERING_TEST = "pkg/scheduler/preemption/preemption_test.go TestCandidatesOrdering"


def cpu_queue(
    name: str,
    cpus: int,
    *,
    within: PreemptionPolicy = NEVER,
    reclaim: PreemptionPolicy = NEVER,
    cohort: str | None = None,
    borrowing_limit: int | None = None,
    lending_limit: int | None = None,
) -> ClusterQueue:
    quota = ResourceQuota(
        cpus * 1000,
        borrowing_limit=None if borrowing_limit is None else borrowing_limit * 1000,
        lending_limit=None if lending_limit is None else lending_limit * 1000,
    )
    return ClusterQueue(
        name=name,
        quotas={CPU: quota},
        cohort=cohort,
        preemption=Preemption(within_cluster_queue=within, reclaim_within_cohort=reclaim),
    )


QUEUES = (
    cpu_queue("standalone", 6, within=LOWER),
    cpu_queue("c1", 6, cohort="cohort", borrowing_limit=6, within=LOWER, reclaim=LOWER),
    cpu_queue("c2", 6, cohort="cohort", borrowing_limit=6, within=NEVER, reclaim=ANY),
    cpu_queue("preventStarvation", 6, within=NEWER_EQUAL),
    cpu_queue("lend1", 6, cohort="cohort-lend", lending_limit=4, within=LOWER, reclaim=LOWER),
    cpu_queue("lend2", 6, cohort="cohort-lend", lending_limit=2, within=LOWER, reclaim=LOWER),
)


@dataclass(frozen=True)
class Admitted:
    name: str
    queue: str
    cpus: int
    priority: int = 0
    created: float = 0  # seconds after the tests' origin
    reserved: float = 0  # QuotaReserved time, seconds after the origin


def workload(
    name: str, queue: str, cpus: int, *, priority: int = 0, created: float = 0
) -> Workload:
    return Workload(
        namespace="ns",
        name=name,
        queue_name=queue,
        created_at=at(created),
        pod_sets=(PodSet("main", 1, {CPU: cpus * 1000}),),
        priority=priority,
        uid=f"uid-{name}",
    )


def state_with(admitted: tuple[Admitted, ...], *, boost: bool = False) -> KueueState:
    state = KueueState(features=KueueFeatures(priority_boost=boost))
    for cq in QUEUES:
        state = state.with_cluster_queue(cq).with_local_queue(LocalQueue("ns", cq.name, cq.name))
    for a in admitted:
        base = workload(a.name, a.queue, a.cpus, priority=a.priority, created=a.created)
        state = state.with_workload(
            base.admitted(Admission(a.queue, at(a.reserved), base.requests))
        )
    return state


# TestPreemption's three standalone workloads of 2 cpu each, at priorities -1, 0 and 1.
LOW_MID_HIGH = (
    Admitted("low", "standalone", 2, -1),
    Admitted("mid", "standalone", 2),
    Admitted("high", "standalone", 2, 1),
)


def targets_for(state: KueueState, incoming: Workload, queue: str) -> tuple[Target, ...]:
    """What Kueue would preempt to admit `incoming` (one pod) in ClusterQueue `queue`."""
    cq = state.cluster_queues[queue]
    charge = cq.charge(incoming.requests, pods=1)
    return preemption_targets(state, ledger(state), preemptor=incoming, cq=cq, charge=charge)


@dataclass(frozen=True)
class Row:
    case: str  # the Kueue test case the expected answer comes from
    admitted: tuple[Admitted, ...]
    queue: str
    cpus: int
    priority: int
    expected: dict[str, str]  # preempted workload -> Preempted condition reason
    created: float = 0


ROWS = [
    Row(
        "preempt lowest priority",
        LOW_MID_HIGH,
        "standalone",
        2,
        1,
        {"low": IN_CLUSTER_QUEUE},
    ),
    Row(
        "preempt multiple",
        LOW_MID_HIGH,
        "standalone",
        3,
        1,
        {"low": IN_CLUSTER_QUEUE, "mid": IN_CLUSTER_QUEUE},
    ),
    Row(
        "no preemption for low priority",
        (Admitted("low", "standalone", 3, -1), Admitted("mid", "standalone", 3)),
        "standalone",
        1,
        -1,
        {},
    ),
    Row(
        "not enough low priority workloads",
        (Admitted("low", "standalone", 3, -1), Admitted("mid", "standalone", 3)),
        "standalone",
        4,
        0,
        {},
    ),
    Row(
        "some free quota, preempt low priority",
        (
            Admitted("low", "standalone", 1, -1),
            Admitted("mid", "standalone", 1),
            Admitted("high", "standalone", 3, 1),
        ),
        "standalone",
        2,
        1,
        {"low": IN_CLUSTER_QUEUE},
    ),
    Row(
        "minimal set excludes low priority",
        (
            Admitted("low", "standalone", 1, -1),
            Admitted("mid", "standalone", 2),
            Admitted("high", "standalone", 3, 1),
        ),
        "standalone",
        2,
        1,
        {"mid": IN_CLUSTER_QUEUE},
    ),
    Row(
        "reclaim quota from borrower",
        (
            Admitted("c1-low", "c1", 3, -1),
            Admitted("c2-mid", "c2", 3),
            Admitted("c2-high", "c2", 6, 1),
        ),
        "c1",
        3,
        1,
        {"c2-mid": IN_COHORT_RECLAMATION},
    ),
    Row(
        "not enough workloads borrowing",
        (
            Admitted("c1-high", "c1", 4, 1),
            Admitted("c2-low-1", "c2", 4, -1),
            Admitted("c2-low-2", "c2", 4, -1),
        ),
        "c1",
        4,
        1,
        {},
    ),
    Row(
        "do not reclaim borrowed quota from same priority for "
        "withinCohort=ReclaimFromLowerPriority",
        (Admitted("c1", "c1", 2), Admitted("c2-1", "c2", 4), Admitted("c2-2", "c2", 4)),
        "c1",
        4,
        0,
        {},
    ),
    Row(
        "reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny",
        (Admitted("c1-1", "c1", 4), Admitted("c1-2", "c1", 4, 1), Admitted("c2", "c2", 2)),
        "c2",
        4,
        0,
        {"c1-1": IN_COHORT_RECLAMATION},
    ),
    Row(
        "preempt newer workloads with the same priority",
        (
            Admitted("wl1", "preventStarvation", 2, 2),
            Admitted("wl2", "preventStarvation", 2, 1, created=15, reserved=16),
            Admitted("wl3", "preventStarvation", 2, 1, created=15, reserved=15),
        ),
        "preventStarvation",
        2,
        1,
        {"wl2": IN_CLUSTER_QUEUE},
        created=0,
    ),
    Row(
        "reclaim quota from lender",
        (
            Admitted("lend1-low", "lend1", 3, -1),
            Admitted("lend2-mid", "lend2", 3),
            Admitted("lend2-high", "lend2", 4, 1),
        ),
        "lend1",
        3,
        1,
        {"lend2-mid": IN_COHORT_RECLAMATION},
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[f"{PREEMPTION_TEST}: {r.case}" for r in ROWS])
def test_preemption_targets_are_kueues(row: Row) -> None:
    state = state_with(row.admitted)
    incoming = workload("in", row.queue, row.cpus, priority=row.priority, created=row.created)
    targets = targets_for(state, incoming, row.queue)
    assert {t.workload.name: t.reason for t in targets} == row.expected


@pytest.mark.parametrize(
    ("case", "preemptor", "candidate", "policy", "expected"),
    [
        ("LowerPriority: preemptor has higher priority", (10, 0, 0), (5, 0, 0), LOWER, True),
        ("LowerPriority: preemptor has same priority", (10, 0, 0), (10, 0, 0), LOWER, False),
        (
            "LowerOrNewerEqualPriority: preemptor has same priority, same timestamp",
            (10, 0, 0),
            (10, 0, 0),
            NEWER_EQUAL,
            False,
        ),
        (
            "LowerOrNewerEqualPriority: preemptor has same priority, newer timestamp "
            "(within 5min buffer)",
            (10, 0, 60),
            (10, 0, 0),
            NEWER_EQUAL,
            False,
        ),
        (
            "LowerOrNewerEqualPriority: preemptor has same priority, older timestamp "
            "(within 5min buffer)",
            (10, 0, 0),
            (10, 0, 60),
            NEWER_EQUAL,
            True,
        ),
        ("PreemptionPolicyAny", (10, 0, 0), (10, 0, 360), ANY, True),
        ("PreemptionPolicyNever", (10, 0, 0), (10, 0, 360), NEVER, False),
        (
            "LowerPriority: boost makes low-priority immune to medium-priority preemption",
            (200, 0, 0),
            (100, 150, 0),
            LOWER,
            False,
        ),
        (
            "LowerPriority: boost on preemptor enables preemption of higher raw priority",
            (100, 200, 0),
            (200, 0, 0),
            LOWER,
            True,
        ),
        (
            "LowerOrNewerEqualPriority: boost equalizes priorities, older preemptor can "
            "preempt newer candidate",
            (100, 100, 0),
            (200, 0, 1),
            NEWER_EQUAL,
            True,
        ),
        (
            "LowerOrNewerEqualPriority: equal effective priority, newer preemptor cannot "
            "preempt older candidate",
            (100, 100, 1),
            (200, 0, 0),
            NEWER_EQUAL,
            False,
        ),
        (
            "Any: always satisfies regardless of priority or boost",
            (50, 0, 0),
            (100, 200, 0),
            ANY,
            True,
        ),
    ],
    ids=lambda v: f"{POLICY_TEST}: {v}" if isinstance(v, str) and " " in v else None,
)
def test_preemption_policy_with_the_boost_gate_on_is_kueues(
    case: str,
    preemptor: tuple[int, int, float],
    candidate: tuple[int, int, float],
    policy: PreemptionPolicy,
    expected: bool,
) -> None:
    """Each side is (priority, boost annotation, creation seconds); Kueue's cases with a
    boost run with the PriorityBoost gate on, as here."""
    state = KueueState(features=KueueFeatures(priority_boost=True))

    def make(name: str, side: tuple[int, int, float]) -> Workload:
        priority, boost, created = side
        return replace(
            workload(name, "q", 1, priority=priority, created=created), priority_boost=boost
        )

    assert satisfies_policy(state, make("p", preemptor), make("c", candidate), policy) is expected


@pytest.mark.parametrize("boost_gate", [True, False])
def test_the_boost_orders_candidates_only_behind_its_gate(boost_gate: bool) -> None:
    """TestCandidatesOrdering "workloads sorted by effective priority with boost" (gate on:
    low-boost, high-boost) and, gate off, the annotation ignored (pkg/util/priority/
    priority.go, PriorityBoost returns 0): equal priority, equal admission time, then UID."""
    state = state_with(())
    for name, boost in (("high-boost", 100), ("low-boost", 5)):
        base = replace(workload(name, "standalone", 3, priority=10), priority_boost=boost, uid=name)
        state = state.with_workload(base.admitted(Admission("standalone", at(0), base.requests)))
    state = replace(state, features=KueueFeatures(priority_boost=boost_gate))
    incoming = workload("in", "standalone", 3, priority=10 + 50)
    targets = targets_for(state, incoming, "standalone")
    # The first candidate in order is the one removed: the minimal set is one workload.
    assert [t.workload.name for t in targets] == (["low-boost"] if boost_gate else ["high-boost"])


def test_a_pass_evicts_the_victims_and_a_later_pass_admits_the_preemptor() -> None:
    """Kueue's scheduler issues the preemptions and requeues the preemptor (pkg/scheduler/
    scheduler.go, processEntry; markPreemptionOutcome); the victim is evicted with the message
    of TestPreemption "preempt lowest priority" and requeued (jobframework/reconciler.go)."""
    state = state_with(LOW_MID_HIGH)
    incoming = replace(workload("in", "standalone", 2, priority=1), uid="wl-in", job_uid="job-in")
    state = state.with_workload(incoming)
    first, events = admit_pending(state, at(100))
    low = first.workload(WorkloadRef("ns", "low"))
    assert low.phase is Phase.PENDING and low.preempted is not None
    assert low.preempted.reason == IN_CLUSTER_QUEUE
    assert low.preempted.message == (
        "Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization "
        "in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone"
    )
    waiting = first.workload(incoming.ref)
    assert waiting.phase is Phase.PENDING
    assert waiting.awaiting_preemption == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
        "default-flavor, 2 more needed. Pending the preemption of 1 workload(s)"
    )
    assert [e.kind.value for e in events] == ["Preempted"]
    second, events = admit_pending(first, at(101))
    assert second.workload(incoming.ref).phase is Phase.ADMITTED
    assert second.workload(low.ref).phase is Phase.PENDING  # lower priority: waits behind
    assert [(e.kind.value, e.workload.name) for e in events] == [("Admitted", "in")]


def test_a_queue_without_a_preemption_policy_never_preempts() -> None:
    """The CRD's defaults are Never (kueue apis/kueue/v1beta2 clusterqueue_types.go)."""
    state = state_with((Admitted("low", "standalone", 6, -1),))
    state = state.with_cluster_queue(
        replace(state.cluster_queues["standalone"], preemption=Preemption())
    )
    incoming = workload("in", "standalone", 2, priority=100)
    after, events = admit_pending(state.with_workload(incoming), at(100))
    assert events == ()
    assert after == state.with_workload(incoming)
