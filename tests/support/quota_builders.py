"""Builders for Kueue's queues as domain values (domain/queues/facts.py) and reclaim candidates.

    team_a = a_queue("team-a-cq", cohort="team-ab").group(a_flavor("default", {"cpu": 9000}))
    facts = QueueFacts(queues=queues(team_a.using("default", "cpu", 9000), team_b))
    w = a_waiter("w", "team-a-cq", {"cpu": 10_000})

Quantities are in Kueue's canonical units, as the adapter reads them: millicores for cpu,
bytes for memory, whole units for GPUs and pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Self

from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.queues.contention import Candidate
from autoscaler.domain.queues.facts import (
    FlavorQuotas,
    FlavorResource,
    QueueQuota,
    ResourceGroup,
    ResourceQuota,
    Waiter,
)
from tests.support.domain_builders import minutes_ago

GPU = "nvidia.com/gpu"
NS = "team-a"


def quota(
    nominal: int, *, borrowing: int | None = None, lending: int | None = None
) -> ResourceQuota:
    return ResourceQuota(nominal=nominal, borrowing_limit=borrowing, lending_limit=lending)


def a_flavor(name: str, resources: Mapping[str, int | ResourceQuota]) -> FlavorQuotas:
    """A flavor's quotas; a bare number is a nominal quota without limits."""
    quotas = {
        resource: value if isinstance(value, ResourceQuota) else quota(value)
        for resource, value in resources.items()
    }
    return FlavorQuotas(flavor=name, resources=quotas)


@dataclass
class QueueBuilder:
    name: str
    cohort: str | None = None
    groups: list[ResourceGroup] = field(default_factory=list)
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    unmodelled: tuple[str, ...] = ()

    def group(self, *flavors: FlavorQuotas) -> Self:
        """A resource group covering every resource its flavors name, flavors tried in order."""
        covered = tuple(dict.fromkeys(name for f in flavors for name in f.resources))
        self.groups.append(ResourceGroup(covered=covered, flavors=flavors))
        return self

    def using(self, flavor: str, resource: str, qty: int) -> Self:
        self.usage[(flavor, resource)] = self.usage.get((flavor, resource), 0) + qty
        return self

    def not_modelled(self, *why: str) -> Self:
        self.unmodelled = why
        return self

    def build(self) -> QueueQuota:
        return QueueQuota(
            name=self.name,
            cohort=self.cohort,
            groups=tuple(self.groups),
            usage=dict(self.usage),
            unmodelled=self.unmodelled,
        )


def a_queue(name: str, *, cohort: str | None = None) -> QueueBuilder:
    return QueueBuilder(name=name, cohort=cohort)


def gpu_queue(
    name: str, *, gpus: int | ResourceQuota, used: int = 0, cohort: str | None = None
) -> QueueBuilder:
    """A ClusterQueue with one flavor, "a100", of GPUs."""
    return (
        a_queue(name, cohort=cohort).group(a_flavor("a100", {GPU: gpus})).using("a100", GPU, used)
    )


def queues(*built: QueueQuota | QueueBuilder) -> dict[str, QueueQuota]:
    values = [q.build() if isinstance(q, QueueBuilder) else q for q in built]
    return {q.name: q for q in values}


def a_waiter(
    name: str,
    cluster_queue: str,
    requests: Mapping[str, int],
    *,
    priority: int = 0,
    created_minutes_ago: float = 10,
) -> Waiter:
    return Waiter(
        ref=WorkloadRef(NS, name),
        uid=f"uid-{name}",
        local_queue="user-queue",
        cluster_queue=cluster_queue,
        priority=priority,
        created_at=minutes_ago(created_minutes_ago),
        requests=dict(requests),
    )


def an_idle(
    name: str,
    cluster_queue: str,
    *,
    gpus: int,
    flavor: str = "a100",
    other: Mapping[str, int] | None = None,
    priority: int = 0,
    idle_minutes: float = 60,
    cohort: str | None = None,
) -> Candidate:
    """An idle admitted workload charging `gpus` (and `other` resources) in one flavor."""
    usage = {(flavor, GPU): gpus} | {(flavor, r): qty for r, qty in (other or {}).items()}
    return Candidate(
        ref=WorkloadRef(NS, name),
        uid=f"uid-{name}",
        cluster_queue=cluster_queue,
        cohort=cohort,
        priority=priority,
        idle_since=minutes_ago(idle_minutes),
        gpus=gpus,
        usage=usage,
    )
