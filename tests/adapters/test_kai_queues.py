"""KaiQueues (the PendingWork port over KAI Scheduler) against the in-process test API server,
judged by the unchanged when-contended planner: an idle KAI RayCluster row is freed exactly
for a waiting PodGroup whose request the freed GPUs cover within its queue's limit."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.adapters.kai.queues import KaiQueues
from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.management import Manager
from autoscaler.domain.queues.contention import (
    ReclaimPlan,
    WaiterOutcome,
    candidate_of,
    plan_reclaim,
)
from autoscaler.domain.queues.facts import QueueFacts
from autoscaler.domain.tenant_names import Named
from tests.support.builders import (
    GPU,
    fraction_pod,
    kai_pod,
    make_kai_queue,
    make_pod,
    make_podgroup,
)
from tests.support.domain_builders import a_workload
from tests.support.kube_server import KubeServer

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
KINDS = ("queues.scheduling.run.ai", "podgroups.scheduling.run.ai", "pods")
WAITER = WorkloadRef("team-b", "train-pg")
IDLE = WorkloadRef("team-a", "notebook")


@pytest.fixture(scope="module")
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        yield running


@pytest.fixture
def kube(server: KubeServer) -> Iterator[KubeServer]:
    for kind in KINDS:
        for obj in server.store.list(kind):
            meta = obj["metadata"]
            server.store.delete(kind, name=meta["name"], namespace=meta.get("namespace"))
    server.requests.clear()
    server.faults.clear()
    yield server
    assert server.errors == []


def kai_queues(kube: KubeServer) -> KaiQueues:
    client = KubeClient(api_client_for(kube.configuration()), timeout=timedelta(seconds=5))
    return KaiQueues(client=client, logger=logging.getLogger("test.kai"))


def put(kube: KubeServer, *objects: dict[str, Any]) -> None:
    for obj in objects:
        kube.store.put(obj)


def two_teams(kube: KubeServer, *, b_limit: float = -1, b_holds: int = 0) -> None:
    """team-a holds 2 GPUs (the idle notebook's); team-b holds `b_holds` under `b_limit`."""
    put(
        kube,
        make_kai_queue("team-a", gpu_quota=2).allocated(gpus=2).build(),
        make_kai_queue("team-b", gpu_quota=2, gpu_limit=b_limit).allocated(gpus=b_holds).build(),
    )


def waiting(
    kube: KubeServer, *, gpus_per_pod: int = 1, pods: int = 2, queue: str = "team-b"
) -> None:
    """The PodGroup team-b/train-pg, pending, with `pods` unscheduled pods."""
    group = make_podgroup(WAITER.namespace, WAITER.name, queue=queue, min_member=pods)
    put(kube, group.created(T0).pending().build())
    for n in range(pods):
        put(kube, kai_pod("team-b", f"train-{n}", group=WAITER.name, gpus=gpus_per_pod).build())


def idle_kai_row(ref: WorkloadRef = IDLE, *, queue: str = "team-a", gpus: int = 2) -> WorkloadInfo:
    """A KAI-managed RayCluster's row as the fleet reader makes it (H1's contract)."""
    row = a_workload(ref.namespace, ref.name).gpu_pod(f"{ref.name}-head", gpus=gpus).build()
    return replace(
        row,
        manager=Manager.KAI,
        queue=queue,
        cluster_queue=f"kai/{queue}",
        admitted_usage={("kai", GPU): gpus},
    )


def plan_for(facts: QueueFacts, *rows: WorkloadInfo) -> ReclaimPlan:
    candidates = [c for row in rows if (c := candidate_of(row, idle_since=T0)) is not None]
    return plan_reclaim(candidates, facts)


def test_an_idle_kai_row_is_freed_for_a_podgroup_of_another_queue_it_lets_in(
    kube: KubeServer,
) -> None:
    two_teams(kube)
    waiting(kube, gpus_per_pod=1, pods=2)

    facts = kai_queues(kube).read_queues()
    plan = plan_for(facts, idle_kai_row())

    assert facts.failure is None
    assert [(w.ref, w.cluster_queue, dict(w.requests)) for w in facts.waiters] == [
        (WAITER, "kai/team-b", {GPU: 2})
    ]
    assert plan.beneficiary_of(IDLE) == Named(WAITER, "kai/team-b")
    assert plan.waiters[0].outcome is WaiterOutcome.SERVED


def test_nothing_is_freed_when_the_idle_gpus_do_not_cover_the_request(kube: KubeServer) -> None:
    two_teams(kube)
    waiting(kube, gpus_per_pod=2, pods=2)

    plan = plan_for(kai_queues(kube).read_queues(), idle_kai_row())

    assert plan.beneficiary_of(IDLE) is None
    assert plan.waiters[0].outcome is WaiterOutcome.CANNOT_FIT
    assert "needs 4 nvidia.com/gpu" in plan.waiters[0].reason


def test_nothing_is_freed_for_a_waiter_whose_queue_has_reached_its_limit(
    kube: KubeServer,
) -> None:
    two_teams(kube, b_limit=2, b_holds=2)
    waiting(kube, gpus_per_pod=1, pods=2)

    plan = plan_for(kai_queues(kube).read_queues(), idle_kai_row())

    assert plan.beneficiary_of(IDLE) is None
    assert plan.waiters[0].outcome is WaiterOutcome.CANNOT_FIT


def test_a_waiter_fits_when_its_own_queue_frees_what_its_limit_held_back(
    kube: KubeServer,
) -> None:
    two_teams(kube, b_limit=2, b_holds=2)
    waiting(kube, gpus_per_pod=1, pods=2)
    own_idle = idle_kai_row(WorkloadRef("team-b", "old-run"), queue="team-b")

    plan = plan_for(kai_queues(kube).read_queues(), idle_kai_row(), own_idle)

    assert plan.beneficiary_of(own_idle.ref) == Named(WAITER, "kai/team-b")
    assert plan.beneficiary_of(IDLE) is None


def test_a_parent_queues_limit_caps_its_leaves(kube: KubeServer) -> None:
    put(
        kube,
        make_kai_queue("org", gpu_limit=3).allocated(gpus=3).build(),
        make_kai_queue("team-a", parent="org").allocated(gpus=2).build(),
        make_kai_queue("team-b", parent="org", gpu_limit=8).allocated(gpus=1).build(),
        make_kai_queue("other").allocated(gpus=2).build(),
    )
    waiting(kube, gpus_per_pod=1, pods=2)

    plan = plan_for(kai_queues(kube).read_queues(), idle_kai_row(queue="other"))

    assert plan.beneficiary_of(IDLE) is None
    assert "borrowing limit" in plan.waiters[0].reason


@pytest.mark.parametrize(
    ("arrange", "why"),
    [
        pytest.param(
            lambda kube: waiting(kube, queue="team-x"),
            "its queue team-x is not among KAI's queues",
            id="unknown-queue",
        ),
        pytest.param(
            lambda kube: put(
                kube,
                make_podgroup("team-b", "train-pg", queue="team-b").created(T0).pending().build(),
                fraction_pod("team-b", "train-0", group="train-pg").build(),
            ),
            "asks for a share of a GPU (gpu-fraction 0.5)",
            id="fractional-gpu",
        ),
        pytest.param(
            lambda kube: put(
                kube,
                make_podgroup("team-b", "train-pg", queue="team-b").created(T0).pending().build(),
            ),
            "none of its pods waits unscheduled",
            id="pending-without-pods",
        ),
        pytest.param(
            lambda kube: waiting(kube, gpus_per_pod=0),
            "none of its pending pods asks for a nvidia.com/gpu",
            id="no-gpu-request",
        ),
    ],
)
def test_a_podgroup_that_cannot_be_judged_is_a_waiter_with_fit_unknown(
    kube: KubeServer, arrange: Any, why: str
) -> None:
    two_teams(kube)
    arrange(kube)

    facts = kai_queues(kube).read_queues()
    plan = plan_for(facts, idle_kai_row())

    assert [w.ref for w in facts.waiters] == [WAITER]
    assert plan.beneficiary_of(IDLE) is None
    assert plan.waiters[0].outcome is WaiterOutcome.FIT_UNKNOWN
    assert why in plan.waiters[0].reason


def test_running_podgroups_and_bound_pods_are_not_waiters(kube: KubeServer) -> None:
    two_teams(kube)
    put(
        kube,
        make_podgroup("team-b", "running-pg", queue="team-b").created(T0).running().build(),
        kai_pod("team-b", "bound", group="running-pg", gpus=1).node("gpu-1").build(),
        make_pod("team-b", "plain").gpus(1).build(),  # no PodGroup: not KAI's to place
    )

    facts = kai_queues(kube).read_queues()

    assert facts.failure is None
    assert facts.waiters == ()
    assert set(facts.queues) == {"kai/team-a", "kai/team-b"}


def test_the_pods_are_read_in_one_list_of_unscheduled_pending_pods(kube: KubeServer) -> None:
    two_teams(kube)
    waiting(kube)

    kai_queues(kube).read_queues()

    reads = kube.requests.matching("GET")
    assert [r.path for r in reads] == [
        "/apis/scheduling.run.ai/v2/queues",
        "/apis/scheduling.run.ai/v2alpha2/podgroups",
        "/api/v1/pods",
    ]
    assert reads[2].query["fieldSelector"] == "status.phase=Pending,spec.nodeName="


@pytest.mark.parametrize(
    ("status", "why"),
    [
        pytest.param(403, "cannot read KAI Scheduler's queues", id="forbidden"),
        pytest.param(404, "KAI Scheduler's queues are not served", id="crd-missing"),
    ],
)
def test_a_failed_read_is_a_failure_never_nobody_waits(
    kube: KubeServer, status: int, why: str
) -> None:
    two_teams(kube)
    waiting(kube)
    kube.faults.fail_next("GET", "/apis/scheduling.run.ai/v2alpha2/podgroups", status=status)

    facts = kai_queues(kube).read_queues()
    plan = plan_for(facts, idle_kai_row())

    assert facts.failure is not None and why in facts.failure
    assert plan.beneficiary_of(IDLE) is None


def test_kai_not_installed_is_a_failure() -> None:
    with KubeServer(
        disabled_versions={"scheduling.run.ai/v2", "scheduling.run.ai/v2alpha2"}
    ) as bare:
        facts = kai_queues(bare).read_queues()

    assert facts.failure is not None
    assert "is KAI installed?" in facts.failure
