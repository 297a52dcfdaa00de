"""The simulated Kueue behind the `PendingWork` port, and what a `when-contended` stop sees of
it: quotas, usage and waiters read like a real cluster's, the borrower freed for a waiter."""

from __future__ import annotations

import logging
from datetime import timedelta

from autoscaler.domain.models import Action, Decision, State, WorkloadRef
from autoscaler.domain.queues.facts import FlavorQuotas, ResourceGroup, ResourceQuota, Waiter
from autoscaler.engine.cycle.reclaim import Reclaimer
from autoscaler.sim.clock import SimulatedClock
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.kueue_model import KueueState, LocalQueue
from autoscaler.sim.pods import GpuPool, RayClusterSpec, WorkerGroup
from autoscaler.sim.queues import STRICT_FIFO, SimulatedQueues, queue_facts
from autoscaler.sim.quota import ClusterQueue, QueueingStrategy
from autoscaler.sim.workload_info import workload_uid
from tests.sim.builders import GPU, T0, at, gpu_queue, make_workload, state_of
from tests.support.domain_builders import A_DEFAULT_RULE

FLAVOR = "default-flavor"
ROOMY = {"cpu": 96_000, "memory": 768 * 2**30}  # only GPUs are scarce


def test_each_cluster_queue_is_one_group_of_its_flavor_with_its_limits_and_usage() -> None:
    dev = gpu_queue("cq-dev", 8, cohort="lab", borrowing_limit=4)
    prod = gpu_queue("cq-prod", 8, cohort="lab", lending_limit=2)
    running = make_workload("ns", "notebook").queue("cq-dev").gpus(10).admitted("cq-dev").build()

    facts = queue_facts(state_of(dev, prod, workloads=(running,)))

    assert set(facts.queues) == {"cq-dev", "cq-prod"}
    dev_facts = facts.queues["cq-dev"]
    assert dev_facts.cohort == "lab"
    assert dev_facts.groups == (
        ResourceGroup(
            covered=(GPU,),
            flavors=(FlavorQuotas(FLAVOR, {GPU: ResourceQuota(8, borrowing_limit=4)}),),
        ),
    )
    assert dev_facts.usage == {(FLAVOR, GPU): 10}
    assert facts.queues["cq-prod"].groups[0].flavors[0].resources[GPU].lending_limit == 2
    assert facts.queues["cq-prod"].usage == {}
    assert (facts.waiters, facts.failure, facts.source) == ((), None, "workloads")


def test_a_waiter_carries_its_summed_requests_priority_creation_and_both_queues() -> None:
    waiting = (
        make_workload("ns", "finetune")
        .queue("cq-prod")
        .created(60)
        .priority(1000, "prod-priority")
        .pod_set("head", 1, {GPU: 1, "cpu": 2000})
        .pod_set("workers", 3, {GPU: 2, "cpu": 1000})
        .build()
    )

    facts = queue_facts(state_of(gpu_queue("cq-prod", 4), workloads=(waiting,)))

    assert facts.waiters == (
        Waiter(
            ref=WorkloadRef("ns", "finetune"),
            uid=workload_uid(WorkloadRef("ns", "finetune")),
            local_queue="cq-prod",
            cluster_queue="cq-prod",
            priority=1000,
            created_at=at(60),
            requests={GPU: 7, "cpu": 5000},
        ),
    )


def test_a_strict_fifo_queue_is_reported_as_not_modelled() -> None:
    strict = gpu_queue("cq-strict", 4, strategy=QueueingStrategy.STRICT_FIFO)

    facts = queue_facts(state_of(strict, gpu_queue("cq-plain", 4)))

    assert facts.queues["cq-strict"].unmodelled == (STRICT_FIFO,)
    assert facts.queues["cq-plain"].unmodelled == ()


def test_a_workload_whose_local_queue_does_not_exist_waits_for_nothing_freeing_could_give() -> None:
    lost = make_workload("ns", "lost").queue("no-such-queue").gpus(1).build()
    inactive = make_workload("ns", "stopped").queue("cq").gpus(1).inactive().build()

    facts = queue_facts(state_of(gpu_queue("cq", 4), workloads=(lost, inactive)))

    assert facts.waiters == ()


def test_the_port_reads_the_state_as_it_is_at_each_call() -> None:
    state = {"now": state_of(gpu_queue("cq", 4))}
    queues = SimulatedQueues(read=lambda: state["now"])
    assert queues.read_queues().waiters == ()

    state["now"] = state["now"].with_workload(make_workload("ns", "late").queue("cq").build())

    assert [w.ref.name for w in queues.read_queues().waiters] == ["late"]


# The simulated cluster: what its workloads and queues say, and a when-contended stop on it.


def lab_cluster() -> tuple[SimulatedCluster, SimulatedClock]:
    """cq-notebooks and cq-training (8 GPUs each) in cohort lab; three 4-GPU notebooks
    admitted in that order (the third borrows 4 of cq-training's), one 4-GPU eval server."""
    kueue = KueueState().with_priority_class("dev", 100)
    for name in ("notebooks", "training"):
        cq = ClusterQueue.from_nominal(f"cq-{name}", {**ROOMY, GPU: 8}, cohort="lab")
        kueue = kueue.with_cluster_queue(cq).with_local_queue(LocalQueue(name, "lq", cq.name))
    clock = SimulatedClock(start=T0, speed=None)
    cluster = SimulatedCluster(kueue=kueue, gpus=GpuPool.for_gpus(16), clock=clock)
    for name in ("alice", "bob", "carol"):
        cluster.create(four_gpus("notebooks", name, priority="dev"), now=clock.now())
        cluster.step(now=clock.now())
        clock.advance(timedelta(minutes=1))
    cluster.create(four_gpus("training", "eval"), now=clock.now())
    cluster.step(now=clock.now())
    return cluster, clock


def four_gpus(namespace: str, name: str, *, priority: str | None = None) -> RayClusterSpec:
    workers = (WorkerGroup("gpu-group", replicas=2, gpus=2),)
    return RayClusterSpec(namespace, name, "lq", workers=workers, priority_class=priority)


def test_the_simulated_cluster_tells_each_workload_its_cohort_priority_and_admitted_usage() -> None:
    cluster, _ = lab_cluster()

    found = {info.owner.name: info for info in cluster.list_workloads() if info.owner}

    alice = found["alice"]
    assert (alice.cohort, alice.priority, alice.cluster_queue) == ("lab", 100, "cq-notebooks")
    assert alice.admitted_usage[(FLAVOR, GPU)] == 4
    assert found["eval"].priority == 0


def test_a_when_contended_stop_frees_only_the_borrower_that_lets_the_waiter_in() -> None:
    cluster, clock = lab_cluster()
    waiter = cluster.create(four_gpus("training", "finetune"), now=clock.now())
    cluster.step(now=clock.now())  # the cohort is full: it waits
    infos = [info for info in cluster.list_workloads() if info.admitted]
    idle_hours = {"eval": 3, "bob": 2, "carol": 1, "alice": 1}
    decisions = [
        Decision(
            info.ref,
            State.IDLE,
            Action.DEACTIVATE,
            "idle",
            idle_since=clock.now() - timedelta(hours=idle_hours[name_of(cluster, info.ref)]),
            rule=A_DEFAULT_RULE,
        )
        for info in infos
    ]
    reclaimer = Reclaimer(
        pending=SimulatedQueues(read=cluster.kueue), logger=logging.getLogger("test")
    )

    screened, seen = reclaimer.screen(infos, decisions, contended=lambda d: True)

    # cq-notebooks borrows: its notebooks go first, the longest idle of them (bob) suffices;
    # the eval server, idle longer but within cq-training's own quota, stays.
    stopped = {name_of(cluster, d.workload): d.beneficiary for d in screened if d.beneficiary}
    assert stopped == {"bob": waiter}
    assert seen is not None and dict(seen.outcomes) == {"served": 1}
    left = [d for d in screened if d.action is Action.NONE]
    assert len(left) == 3 and all("left running" in d.reason for d in left)


def name_of(cluster: SimulatedCluster, ref: WorkloadRef) -> str:
    return cluster.spec(ref).name


def test_with_nobody_waiting_every_when_contended_stop_is_left_running() -> None:
    cluster, clock = lab_cluster()
    infos = [info for info in cluster.list_workloads() if info.admitted]
    decisions = [
        Decision(
            info.ref,
            State.IDLE,
            Action.DEACTIVATE,
            "idle",
            idle_since=clock.now(),
            rule=A_DEFAULT_RULE,
        )
        for info in infos
    ]
    reclaimer = Reclaimer(
        pending=SimulatedQueues(read=cluster.kueue), logger=logging.getLogger("test")
    )

    screened, _ = reclaimer.screen(infos, decisions, contended=lambda d: True)

    assert [d.action for d in screened] == [Action.NONE] * 4
