"""A Workload's placement (node selector, required node affinity, tolerations, minCount) and
ResourceFlavors' node labels and taints, read by KueueQueues from the in-process test API
server, judged as Kueue's flavor assigner judges them (checkFlavorForPodSets): a waiter
whose only usable flavor is tainted against it does not fit, and the reclaim plan frees
nothing for it, while a waiter the flavors do admit is served."""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.kueue.queues import KueueQueues
from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.queues.contention import WaiterOutcome, plan_reclaim
from autoscaler.domain.queues.facts import QueueFacts
from autoscaler.domain.queues.fit import FitOutcome, fit
from autoscaler.domain.queues.placement import NodeRequirement, Taint, Toleration
from autoscaler.domain.tenant_names import Named
from autoscaler.settings.tree import ClusterSettings
from tests.support.builders import (
    GPU,
    flavor_quota,
    make_cluster_queue,
    make_local_queue,
    make_resource_flavor,
    make_workload,
    resource_group,
)
from tests.support.crd_validation import assert_valid
from tests.support.kube_server import KubeServer
from tests.support.quota_builders import an_idle

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NS = "team-a"
SPOT_TAINT = {"key": "spot", "value": "true", "effect": "NoSchedule"}
SPOT_TOLERATION = {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
QUOTA = {"cpu": {"nominalQuota": "64"}, GPU: {"nominalQuota": "4"}}


@pytest.fixture
def kube() -> Iterator[KubeServer]:
    with KubeServer() as running:
        yield running
        assert running.errors == []


@pytest.fixture
def queues(kube: KubeServer) -> KueueQueues:
    settings = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")
    client = KubeClient(api_client_for(kube.configuration()), timeout=timedelta(seconds=5))
    cluster = KueueCluster(client=client, settings=settings)
    return KueueQueues(client=client, objects=cluster, logger=logging.getLogger("test.placement"))


def put(kube: KubeServer, obj: Any) -> None:
    assert_valid(obj)
    kube.store.put(obj)


def flavors_and_queue(kube: KubeServer) -> None:
    """ "reserved" (pool=reserved, no taint, its 4 GPUs all used by an idle workload) tried
    before "spot" (pool=spot, tainted spot=true:NoSchedule, 4 GPUs free)."""
    reserved = make_resource_flavor("reserved").build()
    reserved["spec"] = {"nodeLabels": {"pool": "reserved"}}
    spot = make_resource_flavor("spot").build()
    spot["spec"] = {"nodeLabels": {"pool": "spot"}, "nodeTaints": [SPOT_TAINT]}
    queue = (
        make_cluster_queue("cq")
        .groups(
            resource_group(
                ["cpu", GPU], flavor_quota("reserved", QUOTA), flavor_quota("spot", QUOTA)
            )
        )
        .reserved("reserved", {"cpu": "4", GPU: "4"})
        .build()
    )
    for obj in (
        reserved,
        spot,
        queue,
        make_local_queue(NS, "user-queue").cluster_queue("cq").build(),
    ):
        put(kube, obj)


def waiter(kube: KubeServer, name: str, *, minutes: int, **pod_spec: Any) -> None:
    """A pending Workload of one pod set "workers": 2 pods of 1 GPU, at least 1 (minCount)."""
    builder = make_workload(NS, name).pod_set("workers", count=2, gpus=1).queue("user-queue")
    obj = builder.build()
    pod_set = obj["spec"]["podSets"][0]
    pod_set["minCount"] = 1
    pod_set["template"]["spec"].update(copy.deepcopy(pod_spec))
    stamp = T0 + timedelta(minutes=minutes)
    obj["metadata"]["creationTimestamp"] = stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    put(kube, obj)


def affinity(*values: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": list(values)}]}
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


def test_placement_and_flavor_nodes_are_read_as_kueue_reads_them(
    kube: KubeServer, queues: KueueQueues
) -> None:
    flavors_and_queue(kube)
    waiter(kube, "tolerating", minutes=0, affinity=affinity("spot"), tolerations=[SPOT_TOLERATION])

    facts = queues.read_queues()

    spot = facts.queues["cq"].groups[0].flavors[1]
    assert (spot.flavor, dict(spot.nodes.labels)) == ("spot", {"pool": "spot"})
    assert spot.nodes.taints == (Taint("spot", "true", "NoSchedule"),)
    (read,) = facts.waiters
    (pod_set,) = read.pod_sets
    assert (pod_set.name, pod_set.count, pod_set.min_count) == ("workers", 2, 1)
    assert pod_set.placement.affinity_terms == ((NodeRequirement("pool", "In", ("spot",)),),)
    assert pod_set.placement.tolerations == (Toleration("spot", "Equal", "true", "NoSchedule"),)
    # reserved is full and excluded by the affinity; spot's taint is tolerated: Kueue's spot.
    result = fit(read, facts.queues)
    assert result.outcome is FitOutcome.FITS, result.reason
    assert result.pod_sets == {"workers": {"cpu": "spot", GPU: "spot"}}


def test_a_waiter_tainted_out_of_its_only_flavor_frees_nothing(
    kube: KubeServer, queues: KueueQueues
) -> None:
    flavors_and_queue(kube)
    waiter(kube, "untolerating", minutes=0, nodeSelector={"pool": "spot"})
    waiter(kube, "reserved-only", minutes=1, affinity=affinity("reserved"))
    idle = an_idle("idle", "cq", gpus=4, flavor="reserved", other={"cpu": 4000})
    facts = queues.read_queues()

    plan = plan_reclaim([idle], QueueFacts(queues=facts.queues, waiters=facts.waiters))

    untolerating, reserved_only = plan.waiters
    assert untolerating.waiter == WorkloadRef(NS, "untolerating")
    # Its node selector excludes "reserved" and it does not tolerate "spot": Kueue assigns
    # no flavor, whatever the count (minCount does not help), so nothing is freed for it.
    assert untolerating.outcome is WaiterOutcome.CANNOT_FIT, untolerating.reason
    assert "untolerated taint spot=true:NoSchedule in flavor spot" in untolerating.reason
    assert untolerating.freed == ()
    # The one whose affinity allows only "reserved" is served by freeing the idle workload.
    assert reserved_only.outcome is WaiterOutcome.SERVED, reserved_only.reason
    assert plan.beneficiary_of(idle.ref) == Named(WorkloadRef(NS, "reserved-only"), "cq")
