"""The emulated Kueue's fair sharing against Kueue's own unit-test cases.

Expected answers are copied from kubernetes-sigs/kueue at ff69552e, each row naming its case:
pkg/cache/scheduler/fair_sharing_test.go TestDominantResourceShare (a queue's DRS value and
dominant resource) and pkg/scheduler/scheduler_fs_test.go TestScheduleForFairSharing (which
head a scheduling pass admits). This model has no Cohort objects: a cohort's own quota
("MakeCohort("A").Resource(cpu, "8")") is written as one more member queue, "cohort-quota",
that lends all of it and runs nothing, which gives the cohort the same lendable quota.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from autoscaler.sim import ClusterQueue, KueueState, LocalQueue, Phase, ResourceQuota, Workload
from autoscaler.sim.admission import admit_pending, ledger
from autoscaler.sim.fair_sharing import dominant_resource_share
from autoscaler.sim.kueue_model import Admission, KueueFeatures, PodSet

from .builders import at

CPU = "cpu"
GPU = "example.com/gpu"
DRS_TEST = "pkg/cache/scheduler/fair_sharing_test.go TestDominantResourceShare"
SCHEDULE_TEST = "pkg/scheduler/scheduler_fs_test.go TestScheduleForFairSharing"


def queue(
    name: str, quotas: dict[str, tuple[int, int | None]], *, weight: float = 1.0
) -> ClusterQueue:
    """quotas: resource -> (nominal, lending limit), in canonical units."""
    return ClusterQueue(
        name=name,
        quotas={r: ResourceQuota(n, lending_limit=lend) for r, (n, lend) in quotas.items()},
        cohort="test-cohort",
        fair_weight=weight,
    )


@dataclass(frozen=True)
class DrsRow:
    case: str
    cq: ClusterQueue
    lender: ClusterQueue
    usage: dict[str, int]
    added: dict[str, int]
    value: float  # Kueue's DrValue: the weighted share rounded up; inf for math.MaxInt
    resource: str


def cpu_gpu(name: str, cpu: int, gpu: int, *, gpu_lend: int | None = None) -> ClusterQueue:
    return queue(name, {CPU: (cpu * 1000, None), GPU: (gpu, gpu_lend)})


DRS_ROWS = [
    DrsRow("usage below nominal", cpu_gpu("cq", 2, 5), cpu_gpu("lending-cq", 8, 5),
           {CPU: 1000, GPU: 2}, {}, 0, ""),
    DrsRow("usage above nominal", cpu_gpu("cq", 2, 5), cpu_gpu("lending-cq", 8, 5),
           {CPU: 3000, GPU: 7}, {}, 200, GPU),
    DrsRow("one resource above nominal", cpu_gpu("cq", 2, 5), cpu_gpu("lending-cq", 8, 5),
           {CPU: 3000, GPU: 3}, {}, 100, CPU),
    DrsRow("usage with workload above nominal", cpu_gpu("cq", 2, 5), cpu_gpu("lending-cq", 8, 5),
           {CPU: 1000, GPU: 2}, {CPU: 4000, GPU: 4}, 300, CPU),
    DrsRow("A resource with zero lendable", cpu_gpu("cq", 2, 2, gpu_lend=0),
           cpu_gpu("lending-cq", 8, 64, gpu_lend=0), {CPU: 1000, GPU: 1}, {CPU: 4000, GPU: 4},
           300, CPU),
    DrsRow("above nominal with integer weight", queue("cq", {GPU: (5, None)}, weight=2),
           queue("lending-cq", {GPU: (5, None)}), {GPU: 7}, {}, 100, GPU),
    DrsRow("above nominal with decimal weight", queue("cq", {GPU: (5, None)}, weight=0.5),
           queue("lending-cq", {GPU: (5, None)}), {GPU: 7}, {}, 400, GPU),
    DrsRow("above nominal with zero weight", queue("cq", {GPU: (5, None)}, weight=0),
           queue("lending-cq", {GPU: (10, None)}), {GPU: 7}, {}, math.inf, GPU),
]  # fmt: skip


@pytest.mark.parametrize("row", DRS_ROWS, ids=[f"{DRS_TEST}: {r.case}" for r in DRS_ROWS])
def test_dominant_resource_share_is_kueues(row: DrsRow) -> None:
    book = ledger(KueueState().with_cluster_queue(row.cq).with_cluster_queue(row.lender))
    book = book.charged(row.cq.name, row.usage)
    share = dominant_resource_share(book, row.cq, row.added)
    assert (math.ceil(share.weighted) if share.weighted != math.inf else math.inf) == row.value
    assert share.resource == row.resource
    lender = dominant_resource_share(book, row.lender, {})
    assert (lender.weighted, lender.resource) == (0.0, "")


@dataclass(frozen=True)
class Wl:
    name: str
    queue: str
    cpus: int
    priority: int = 0
    created: float = 0
    admitted: bool = False


@dataclass(frozen=True)
class ScheduleRow:
    case: str
    queues: tuple[ClusterQueue, ...]
    workloads: tuple[Wl, ...]
    admitted: set[str]  # wantAssignments
    left: set[str]  # wantLeft


def cpu_queue(
    name: str, cpus: int, *, cohort: str = "A", weight: float = 1.0, limit: int | None = None
) -> ClusterQueue:
    quota = ResourceQuota(cpus * 1000, borrowing_limit=None if limit is None else limit * 1000)
    return ClusterQueue(name=name, quotas={CPU: quota}, cohort=cohort, fair_weight=weight)


def two_queues(cohort_cpus: int, *, weight: float = 1.0) -> tuple[ClusterQueue, ...]:
    return (
        cpu_queue("cohort-quota", cohort_cpus),
        cpu_queue("b", 0, weight=weight),
        cpu_queue("c", 0, weight=weight),
    )


ENG = (  # the on-demand flavor of the test's eng cohort (spot and model-a left out)
    cpu_queue("eng-alpha", 50, cohort="eng", limit=50),
    cpu_queue("eng-beta", 50, cohort="eng", limit=10),
    cpu_queue("eng-shared", 10, cohort="eng", limit=0),
)

SCHEDULE_ROWS = [
    ScheduleRow(
        "with fair sharing: schedule workload with lowest share first", ENG,
        (Wl("all_nominal", "eng-alpha", 50, admitted=True),
         Wl("borrowing", "eng-beta", 55, admitted=True),
         Wl("older_new", "eng-beta", 1, created=-60), Wl("new", "eng-alpha", 5)),
        {"all_nominal", "borrowing", "new"}, {"older_new"},
    ),
    ScheduleRow(
        "fair sharing schedule workload with lowest drf after admission", two_queues(100),
        (Wl("b0", "b", 10, admitted=True), Wl("b1", "b", 50), Wl("c1", "c", 75)),
        {"b0", "b1"}, {"c1"},
    ),
    ScheduleRow(
        "fair sharing two queues with weight 0 schedules workload which borrows less",
        two_queues(8, weight=0),
        (Wl("b0", "b", 4, admitted=True), Wl("b1", "b", 4, priority=9001), Wl("c1", "c", 4)),
        {"b0", "c1"}, {"b1"},
    ),
    ScheduleRow(
        "fair sharing two queues with high weight schedules workload which borrows less",
        two_queues(8, weight=123456789),
        (Wl("b0", "b", 4, admitted=True), Wl("b1", "b", 4, priority=9001), Wl("c1", "c", 4)),
        {"b0", "c1"}, {"b1"},
    ),
    ScheduleRow(
        "fair sharing schedule highest priority first", two_queues(10),
        (Wl("b1", "b", 10, priority=99), Wl("c1", "c", 10, priority=101)), {"c1"}, {"b1"},
    ),
    ScheduleRow(
        "fair sharing schedule earliest timestamp first", two_queues(10),
        (Wl("b1", "b", 10, priority=101, created=1), Wl("c1", "c", 10, priority=101)),
        {"c1"}, {"b1"},
    ),
]  # fmt: skip


def schedule_state(row: ScheduleRow, *, fair_sharing: bool) -> KueueState:
    state = KueueState(features=KueueFeatures(fair_sharing=fair_sharing))
    for cq in row.queues:
        state = state.with_cluster_queue(cq).with_local_queue(LocalQueue("ns", cq.name, cq.name))
    for w in row.workloads:
        workload = Workload(
            namespace="ns",
            name=w.name,
            queue_name=w.queue,
            created_at=at(w.created),
            pod_sets=(PodSet("one", w.cpus, {CPU: 1000}),),
            priority=w.priority,
        )
        if w.admitted:
            workload = workload.admitted(Admission(w.queue, at(0), workload.requests))
        state = state.with_workload(workload)
    return state


@pytest.mark.parametrize(
    "row", SCHEDULE_ROWS, ids=[f"{SCHEDULE_TEST}: {r.case}" for r in SCHEDULE_ROWS]
)
def test_fair_sharing_admits_the_head_kueue_admits(row: ScheduleRow) -> None:
    state, _ = admit_pending(schedule_state(row, fair_sharing=True), at(100))
    assert {w.name for w in state.in_phase(Phase.ADMITTED)} == row.admitted
    assert {w.name for w in state.in_phase(Phase.PENDING)} == row.left


def test_without_fair_sharing_the_classical_order_can_differ() -> None:
    """The weight-0 case under the classical iterator (scheduler.go, makeClassicalIterator):
    both heads borrow, so the higher priority b1 goes first; fair sharing admits c1."""
    row = SCHEDULE_ROWS[2]
    state, _ = admit_pending(schedule_state(row, fair_sharing=False), at(100))
    assert {w.name for w in state.in_phase(Phase.ADMITTED)} == {"b0", "b1"}
