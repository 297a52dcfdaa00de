"""The `PendingWork` port over the simulated Kueue: each ClusterQueue's quota and usage, and
the Workloads that wait, as `domain/queues/facts.py` values, so `when-contended` rules judge the
demo's cohorts with the same fit model as a real cluster's.

The simulation has one ResourceFlavor per ClusterQueue, so each queue is one resource group
with that flavor. A StrictFIFO queue is reported `unmodelled` (the reclaim plan does not know
that its head blocks the waiters behind it). A pending Workload whose LocalQueue or
ClusterQueue does not exist waits for nothing that freeing could give, and is left out.
"""

from __future__ import annotations

from collections.abc import Callable

from autoscaler.domain.queues import facts
from autoscaler.sim.admission import ledger
from autoscaler.sim.kueue_model import KueueState, Phase, Workload
from autoscaler.sim.quota import ClusterQueue, Ledger, QueueingStrategy
from autoscaler.sim.workload_info import workload_uid

STRICT_FIFO = "StrictFIFO queueing (its head blocks the waiters behind it) is not modelled"


class SimulatedQueues:
    """`PendingWork` over whatever Kueue state `read` returns now (the simulated cluster's)."""

    def __init__(self, *, read: Callable[[], KueueState]) -> None:
        self._read = read

    def read_queues(self) -> facts.QueueFacts:
        return queue_facts(self._read())


def queue_facts(kueue: KueueState) -> facts.QueueFacts:
    """The queues' quotas and usage, and the waiters in Kueue's order, as a read would see."""
    book = ledger(kueue)
    queues = {name: _queue(cq, book) for name, cq in sorted(kueue.cluster_queues.items())}
    waiters = tuple(
        waiter
        for workload in kueue.in_phase(Phase.PENDING)
        if (waiter := _waiter(kueue, workload)) is not None
    )
    return facts.QueueFacts(queues=queues, waiters=waiters, source="workloads")


def _queue(cq: ClusterQueue, book: Ledger) -> facts.QueueQuota:
    resources = {
        name: facts.ResourceQuota(
            nominal=quota.nominal,
            borrowing_limit=quota.borrowing_limit,
            lending_limit=quota.lending_limit,
        )
        for name, quota in sorted(cq.quotas.items())
    }
    group = facts.ResourceGroup(
        covered=tuple(resources), flavors=(facts.FlavorQuotas(cq.flavor, resources),)
    )
    usage = {(cq.flavor, name): book.used(cq.name, name) for name in resources}
    strict = cq.queueing_strategy is QueueingStrategy.STRICT_FIFO
    return facts.QueueQuota(
        name=cq.name,
        cohort=cq.cohort,
        groups=(group,),
        usage={key: amount for key, amount in usage.items() if amount},
        unmodelled=(STRICT_FIFO,) if strict else (),
    )


def _waiter(kueue: KueueState, workload: Workload) -> facts.Waiter | None:
    name = kueue.cluster_queue_name(workload)
    cq = None if name is None else kueue.cluster_queues.get(name)
    if cq is None:
        return None
    return facts.Waiter(
        ref=workload.ref,
        uid=workload_uid(workload.ref),
        local_queue=workload.queue_name,
        cluster_queue=cq.name,
        priority=workload.priority,
        created_at=workload.created_at,
        requests=cq.charge(workload.requests, pods=workload.pod_count),
    )
