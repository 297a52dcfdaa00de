"""The pure Kueue model: admission order, cohort borrowing, deactivation, explanations."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoscaler.domain.models import WorkloadRef
from autoscaler.sim import (
    PODS,
    ClusterQueue,
    EventKind,
    KueueState,
    LocalQueue,
    Phase,
    QueueingStrategy,
    ResourceQuota,
    Workload,
    admit_pending,
    ledger,
    pending_queue,
    pending_reason,
    queue_usage,
)

from .builders import GPU, at, gpu_queue, make_workload, state_of


def admitted_names(state: KueueState) -> set[str]:
    return {w.name for w in state.in_phase(Phase.ADMITTED)}


def ref(name: str) -> WorkloadRef:
    return WorkloadRef("ns", name)


# The seed scenarios.


def seed_single_queue() -> KueueState:
    """One 2-GPU ClusterQueue (cpu 9, memory 36Gi, pods 5) and the `demo/user-queue`."""
    cq = ClusterQueue.from_nominal(
        "cluster-queue", {"cpu": 9000, "memory": 36 * 2**30, PODS: 5, GPU: 2}
    )
    return (
        KueueState()
        .with_cluster_queue(cq)
        .with_local_queue(LocalQueue("demo", "user-queue", "cluster-queue"))
    )


def raycluster(name: str, created: float) -> Workload:
    """A RayCluster with a 1-GPU head and one 1-GPU worker."""
    per_pod = {"cpu": 2000, "memory": 8 * 10**9, GPU: 1}
    return (
        make_workload("demo", name)
        .queue("user-queue")
        .created(created)
        .pod_set("head", 1, per_pod)
        .pod_set("workers-group-0", 1, per_pod)
        .build()
    )


def test_the_second_raycluster_waits_for_the_first_and_gets_in_once_it_is_deactivated() -> None:
    state = seed_single_queue()
    state = state.with_workload(raycluster("first-raycluster", 0))
    state = state.with_workload(raycluster("second-raycluster", 5))
    first, second = (
        WorkloadRef("demo", "first-raycluster"),
        WorkloadRef("demo", "second-raycluster"),
    )

    state, events = admit_pending(state, at(10))

    assert [(e.kind, e.workload) for e in events] == [(EventKind.ADMITTED, first)]
    assert state.workload(first).admission is not None
    assert state.workload(first).admission.at == at(10)  # type: ignore[union-attr]
    assert state.workload(second).phase is Phase.PENDING
    assert "needs 2, 0 available" in (pending_reason(state, second) or "")
    assert queue_usage(state, "cluster-queue").used == {
        "cpu": 4000,
        "memory": 16 * 10**9,
        PODS: 2,
        GPU: 2,
    }

    state, events = state.set_active(first, active=False, now=at(600))
    assert [(e.kind, e.cluster_queue) for e in events] == [(EventKind.EVICTED, "cluster-queue")]
    assert queue_usage(state, "cluster-queue").used[GPU] == 0

    state, events = admit_pending(state, at(601))
    assert [(e.kind, e.workload) for e in events] == [(EventKind.ADMITTED, second)]
    assert state.workload(first).phase is Phase.INACTIVE


def seed_cohort() -> KueueState:
    """cq-production (12 GPUs) and cq-development (8 GPUs) sharing the all-gpus cohort."""
    state = KueueState()
    for cq, gpus, lq, ns in (
        ("cq-production", 12, "lq-prod-batch", "prod"),
        ("cq-development", 8, "lq-rd-workspace", "rd"),
    ):
        queue = ClusterQueue.from_nominal(cq, {GPU: gpus}, cohort="all-gpus")
        state = state.with_cluster_queue(queue).with_local_queue(LocalQueue(ns, lq, cq))
    return state.with_priority_class("prod-priority", 1000).with_priority_class("dev-priority", 100)


def test_production_fits_at_once_after_two_borrowing_dev_clusters_are_deactivated() -> None:
    state = seed_cohort()
    for i in range(3):
        dev = make_workload("rd", f"workspace-{i}").queue("lq-rd-workspace").created(i)
        state = state.with_workload(dev.priority(100, "dev-priority").gpus(4).build())
    state, events = admit_pending(state, at(60))
    assert len(events) == 3
    dev_usage = queue_usage(state, "cq-development")
    assert (dev_usage.used[GPU], dev_usage.borrowed[GPU]) == (12, 4)  # 8 own + 4 borrowed
    assert queue_usage(state, "cq-production").available[GPU] == 8

    job = make_workload("prod", "nightly-training").queue("lq-prod-batch").created(3600)
    state = state.with_workload(job.priority(1000, "prod-priority").gpus(12).build())
    state, events = admit_pending(state, at(3600))
    assert events == ()  # no preemption in the model: production waits
    reason = pending_reason(state, WorkloadRef("prod", "nightly-training")) or ""
    assert "cohort all-gpus" in reason
    assert "needs 12, 8 available, 4 more needed" in reason

    for i in (1, 2):
        state, _ = state.set_active(WorkloadRef("rd", f"workspace-{i}"), active=False, now=at(3700))
    state, events = admit_pending(state, at(3700))

    assert [e.workload.name for e in events] == ["nightly-training"]
    assert queue_usage(state, "cq-production").used[GPU] == 12
    assert queue_usage(state, "cq-development").used[GPU] == 4


def test_a_reactivated_workload_keeps_its_place_by_creation_time() -> None:
    old = make_workload("ns", "old").queue("q").created(0).gpus(2).build()
    state = state_of(gpu_queue("q", 2), workloads=(old,))
    state, _ = admit_pending(state, at(1))
    state, _ = state.set_active(ref("old"), active=False, now=at(2))
    newer = make_workload("ns", "newer").queue("q").created(3).gpus(2).build()
    state = state.with_workload(newer)
    state, events = state.set_active(ref("old"), active=True, now=at(4))
    assert [e.kind for e in events] == [EventKind.REQUEUED]
    assert state.workload(ref("newer")).phase is Phase.PENDING  # no admission step yet

    state, events = admit_pending(state, at(5))

    assert [e.workload.name for e in events] == ["old"]
    assert state.workload(ref("old")).requeued_at == at(4)


# Admission decisions, one table.

Q = "q"


def wl(name: str, gpus: int, *, created: float = 0, priority: int = 0, queue: str = Q) -> Workload:
    return (
        make_workload("ns", name)
        .queue(queue)
        .created(created)
        .priority(priority)
        .gpus(gpus)
        .build()
    )


@pytest.mark.parametrize(
    ("queues", "workloads", "expected"),
    [
        pytest.param(
            [gpu_queue(Q, 2)],
            [wl("low", 2, created=0, priority=1), wl("high", 2, created=9, priority=5)],
            {"high"},
            id="higher-priority-first-when-only-one-fits",
        ),
        pytest.param(
            [gpu_queue(Q, 2)],
            [wl("newer", 2, created=9), wl("older", 2, created=0)],
            {"older"},
            id="older-first-at-equal-priority",
        ),
        pytest.param(
            [gpu_queue(Q, 3)],
            [wl("big", 4, created=0, priority=9), wl("small", 2, created=5)],
            {"small"},
            id="best-effort-fifo-lets-a-smaller-one-pass-a-big-one",
        ),
        pytest.param(
            [gpu_queue(Q, 3, strategy=QueueingStrategy.STRICT_FIFO)],
            [wl("big", 4, created=0, priority=9), wl("small", 2, created=5)],
            set(),
            id="strict-fifo-blocks-behind-a-big-one",
        ),
        pytest.param(
            [gpu_queue(Q, 4, cohort="c"), gpu_queue("lender", 4, cohort="c")],
            [wl("a", 4, created=0), wl("b", 4, created=1), wl("c", 2, created=2)],
            {"a", "b"},
            id="borrowing-unused-quota-within-the-cohort",
        ),
        pytest.param(
            [gpu_queue(Q, 4, cohort="c", borrowing_limit=2), gpu_queue("lender", 8, cohort="c")],
            [wl("a", 4, created=0), wl("b", 4, created=1), wl("c", 2, created=2)],
            {"a", "c"},
            id="borrowing-limit-caps-what-a-queue-borrows",
        ),
        pytest.param(
            [gpu_queue(Q, 4, cohort="c"), gpu_queue("lender", 8, cohort="c", lending_limit=2)],
            [wl("a", 4, created=0), wl("b", 4, created=1), wl("c", 2, created=2)],
            {"a", "c"},
            id="lending-limit-keeps-the-lenders-guaranteed-quota",
        ),
        pytest.param(
            [gpu_queue(Q, 4), gpu_queue("other", 8)],
            [wl("a", 4, created=0), wl("b", 4, created=1)],
            {"a"},
            id="no-borrowing-without-a-cohort",
        ),
        pytest.param(
            [gpu_queue(Q, 4, cohort="c"), gpu_queue("b", 4, cohort="c")],
            [
                make_workload("ns", "held").queue(Q).gpus(4).admitted(Q).build(),
                wl("a-borrower", 4, created=1, priority=9),
                wl("b-owner", 4, created=2, priority=1, queue="b"),
            ],
            {"held", "b-owner"},
            id="a-workload-within-nominal-beats-a-higher-priority-borrower",
        ),
        pytest.param(
            [gpu_queue(Q, 4)],
            [make_workload("ns", "a").queue(Q).gpus(1).inactive().build()],
            set(),
            id="an-inactive-workload-is-never-admitted",
        ),
        pytest.param(
            [gpu_queue(Q, 4)],
            [wl("lost", 1, queue="missing")],
            set(),
            id="a-workload-without-its-local-queue-stays-pending",
        ),
    ],
)
def test_admission_decides_who_gets_quota(
    queues: list[ClusterQueue], workloads: list[Workload], expected: set[str]
) -> None:
    state, _ = admit_pending(state_of(*queues, workloads=tuple(workloads)), at(100))
    assert admitted_names(state) == expected


@pytest.mark.parametrize(
    ("requests", "admitted"),
    [
        pytest.param({GPU: 1, "cpu": 1000}, False, id="uncovered-resource-blocks"),
        pytest.param({GPU: 1, "cpu": 0}, True, id="zero-request-for-uncovered-resource-is-fine"),
    ],
)
def test_uncovered_resources_block_admission_unless_zero(
    requests: dict[str, int], admitted: bool
) -> None:
    workload = make_workload("ns", "w").queue(Q).pod_set("main", 1, requests).build()
    _, events = admit_pending(state_of(gpu_queue(Q, 4), workloads=(workload,)), at(1))
    assert bool(events) is admitted


def test_pods_count_against_a_queue_that_covers_them() -> None:
    cq = ClusterQueue.from_nominal(Q, {GPU: 8, PODS: 3})
    two_pods = make_workload("ns", "two").queue(Q).pod_set("main", 2, {GPU: 1}).build()
    two_more = make_workload("ns", "more").queue(Q).created(1).pod_set("main", 2, {GPU: 1}).build()
    state, _ = admit_pending(state_of(cq, workloads=(two_pods, two_more)), at(2))
    assert admitted_names(state) == {"two"}
    assert queue_usage(state, Q).used == {GPU: 2, PODS: 2}


# Why a workload waits.


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        pytest.param(
            state_of(gpu_queue(Q, 2), workloads=(wl("hog", 2), wl("w", 2, created=1))),
            "insufficient quota for nvidia.com/gpu in ClusterQueue q: needs 2, 0 available, "
            "2 more needed",
            id="insufficient-quota",
        ),
        pytest.param(
            state_of(gpu_queue(Q, 1, cohort="all"), workloads=(wl("w", 2),)),
            "insufficient quota for nvidia.com/gpu in ClusterQueue q (cohort all): needs 2, "
            "1 available, 1 more needed",
            id="insufficient-quota-names-the-cohort",
        ),
        pytest.param(
            state_of(gpu_queue(Q, 2), workloads=(wl("w", 1, queue="nope"),)),
            "LocalQueue nope doesn't exist",
            id="missing-local-queue",
        ),
        pytest.param(
            KueueState().with_local_queue(LocalQueue("ns", Q, "gone")).with_workload(wl("w", 1)),
            "ClusterQueue gone doesn't exist",
            id="missing-cluster-queue",
        ),
        pytest.param(
            state_of(
                ClusterQueue.from_nominal(Q, {"cpu": 1000}),
                workloads=(make_workload("ns", "w").queue(Q).gpus(1).build(),),
            ),
            "resource nvidia.com/gpu unavailable in ClusterQueue q",
            id="uncovered-resource",
        ),
        pytest.param(
            state_of(
                gpu_queue(Q, 3, strategy=QueueingStrategy.STRICT_FIFO),
                workloads=(wl("big", 4), wl("w", 1, created=1)),
            ),
            "waiting behind ns/big in StrictFIFO ClusterQueue q",
            id="strict-fifo-head-blocks",
        ),
    ],
)
def test_pending_reason_explains_why_a_workload_waits(state: KueueState, expected: str) -> None:
    state, _ = admit_pending(state, at(100))
    assert pending_reason(state, ref("w")) == expected


def test_pending_reason_is_none_for_an_admitted_workload() -> None:
    state, _ = admit_pending(state_of(gpu_queue(Q, 2), workloads=(wl("w", 1),)), at(1))
    assert pending_reason(state, ref("w")) is None


def test_pending_reason_says_quota_is_free_before_the_next_admission_step() -> None:
    state = state_of(gpu_queue(Q, 2), workloads=(wl("w", 1),))
    expected = "quota is available: waiting for the next admission step"
    assert pending_reason(state, ref("w")) == expected


# Transitions and queries.


def test_deactivating_a_pending_workload_reports_it_without_freeing_anything() -> None:
    state = state_of(gpu_queue(Q, 2), workloads=(wl("w", 4),))
    state, events = state.set_active(ref("w"), active=False, now=at(1))
    assert [(e.kind, e.cluster_queue) for e in events] == [(EventKind.DEACTIVATED, None)]
    assert state.workload(ref("w")).evicted_at == at(1)


def test_writing_the_same_active_value_changes_nothing() -> None:
    state = state_of(gpu_queue(Q, 2), workloads=(wl("w", 1),))
    assert state.set_active(ref("w"), active=True, now=at(1)) == (state, ())


def test_a_finished_workload_releases_its_quota_and_stays_finished() -> None:
    state, _ = admit_pending(state_of(gpu_queue(Q, 2), workloads=(wl("w", 2),)), at(1))
    state, events = state.finish(ref("w"), now=at(2))
    assert [(e.kind, e.cluster_queue) for e in events] == [(EventKind.FINISHED, Q)]
    assert queue_usage(state, Q).used[GPU] == 0
    assert state.set_active(ref("w"), active=False, now=at(3)) == (state, ())
    assert state.finish(ref("w"), now=at(4)) == (state, ())


def test_deleting_a_workload_releases_its_quota() -> None:
    state, _ = admit_pending(state_of(gpu_queue(Q, 2), workloads=(wl("w", 2),)), at(1))
    assert queue_usage(state.without_workload(ref("w")), Q).used[GPU] == 0


def test_admission_leaves_the_given_state_untouched_and_a_second_step_does_nothing() -> None:
    before = state_of(gpu_queue(Q, 2), workloads=(wl("w", 2),))
    after, _ = admit_pending(before, at(1))
    assert before.workload(ref("w")).phase is Phase.PENDING
    assert admit_pending(after, at(2)) == (after, ())


def test_queue_usage_reports_counts_and_nominal_quota() -> None:
    state = state_of(gpu_queue(Q, 2), workloads=(wl("a", 2), wl("b", 1, created=1)))
    state, _ = admit_pending(state, at(1))
    usage = queue_usage(state, Q)
    assert (usage.nominal, usage.available, usage.admitted, usage.pending) == (
        {GPU: 2},
        {GPU: 0},
        1,
        1,
    )


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"phase": Phase.ADMITTED}, id="admitted-without-admission"),
        pytest.param(
            {"admission": make_workload("ns", "x").admitted(Q).build().admission},
            id="pending-with-admission",
        ),
    ],
)
def test_a_workload_refuses_an_impossible_phase(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="admission"):
        Workload(namespace="ns", name="x", queue_name=Q, created_at=at(0), pod_sets=(), **fields)  # type: ignore[arg-type]


def test_the_priority_value_of_an_unknown_class_is_zero() -> None:
    state = KueueState().with_priority_class("prod-priority", 1000)
    assert (state.priority_value("prod-priority"), state.priority_value("nope")) == (1000, 0)
    assert state.priority_value(None) == 0


# Properties.

COHORT_QUEUES = st.lists(
    st.tuples(
        st.integers(0, 8),  # nominal
        st.none() | st.integers(0, 4),  # borrowing limit
        st.none() | st.integers(0, 8),  # lending limit (clipped to nominal)
        st.sampled_from([None, "c"]),
    ),
    min_size=1,
    max_size=3,
)
WORKLOADS = st.lists(
    st.tuples(st.integers(0, 2), st.integers(1, 6), st.integers(0, 3), st.integers(0, 50)),
    max_size=8,
)
OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["off", "on", "finish"]), st.integers(0, 7)), max_size=8
)


def build_state(
    queues: list[tuple[int, int | None, int | None, str | None]],
    workloads: list[tuple[int, int, int, int]],
) -> KueueState:
    cqs = [
        gpu_queue(
            f"q{i}",
            nominal,
            cohort=cohort,
            borrowing_limit=borrow,
            lending_limit=None if lend is None else min(lend, nominal),
        )
        for i, (nominal, borrow, lend, cohort) in enumerate(queues)
    ]
    items = tuple(
        wl(f"w{i}", gpus, created=created, priority=priority, queue=f"q{queue % len(cqs)}")
        for i, (queue, gpus, priority, created) in enumerate(workloads)
    )
    return state_of(*cqs, workloads=items)


def assert_within_quota(state: KueueState) -> None:
    book = ledger(state)
    pools: dict[str, tuple[int, int]] = {}
    for cq in state.cluster_queues.values():
        quota = cq.quotas[GPU]
        used = book.used(cq.name, GPU)
        if quota.borrowing_limit is not None:
            assert used <= quota.nominal + quota.borrowing_limit
        if cq.cohort is None:
            assert used <= quota.nominal
            continue
        lent, drawn = pools.get(cq.cohort, (0, 0))
        pools[cq.cohort] = (lent + quota.lendable, drawn + max(0, used - quota.guaranteed))
    for lendable, drawn in pools.values():
        assert drawn <= lendable


@settings(max_examples=150, deadline=None)
@given(COHORT_QUEUES, WORKLOADS, OPERATIONS)
def test_admitted_usage_never_exceeds_nominal_plus_what_the_cohort_can_lend(
    queues: list[tuple[int, int | None, int | None, str | None]],
    workloads: list[tuple[int, int, int, int]],
    operations: list[tuple[str, int]],
) -> None:
    state, _ = admit_pending(build_state(queues, workloads), at(100))
    assert_within_quota(state)
    for step, (operation, index) in enumerate(operations):
        target = ref(f"w{index}")
        if target not in state.workloads:
            continue
        now = at(200 + step)
        if operation == "finish":
            state, _ = state.finish(target, now=now)
        else:
            state, _ = state.set_active(target, active=operation == "on", now=now)
        state, _ = admit_pending(state, now)
        assert_within_quota(state)
        # Completeness: after a step no pending workload would still fit (BestEffortFIFO).
        for pending in state.in_phase(Phase.PENDING):
            reason = pending_reason(state, pending.ref) or ""
            assert "waiting for the next admission step" not in reason


@settings(max_examples=100, deadline=None)
@given(COHORT_QUEUES, WORKLOADS, st.data())
def test_deactivating_an_admitted_workload_frees_exactly_its_quota(
    queues: list[tuple[int, int | None, int | None, str | None]],
    workloads: list[tuple[int, int, int, int]],
    data: st.DataObject,
) -> None:
    state, _ = admit_pending(build_state(queues, workloads), at(100))
    admitted = state.in_phase(Phase.ADMITTED)
    if not admitted:
        return
    victim = data.draw(st.sampled_from(admitted))
    queue = victim.admission.cluster_queue  # type: ignore[union-attr]
    before = queue_usage(state, queue).used[GPU]

    after, events = state.set_active(victim.ref, active=False, now=at(101))

    assert [e.kind for e in events] == [EventKind.EVICTED]
    assert queue_usage(after, queue).used[GPU] == before - victim.requests[GPU]


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 12), st.lists(st.tuples(st.integers(0, 3), st.integers(0, 20)), max_size=10))
def test_a_queue_of_equal_sized_workloads_admits_by_priority_then_creation(
    nominal: int, workloads: list[tuple[int, int]]
) -> None:
    items = tuple(
        wl(f"w{i}", 2, created=created, priority=priority)
        for i, (priority, created) in enumerate(workloads)
    )
    state = state_of(gpu_queue(Q, nominal), workloads=items)
    order = pending_queue(state, Q)

    state, events = admit_pending(state, at(100))

    assert [e.workload for e in events] == [w.ref for w in order[: nominal // 2]]
    assert {w.ref for w in state.in_phase(Phase.ADMITTED)} == {w.ref for w in order[: nominal // 2]}


def test_resource_quota_splits_nominal_into_guaranteed_and_lendable() -> None:
    quota = ResourceQuota(nominal=12, lending_limit=4)
    assert (quota.guaranteed, quota.lendable) == (8, 4)
    assert (ResourceQuota(nominal=12).guaranteed, ResourceQuota(nominal=12).lendable) == (0, 12)
