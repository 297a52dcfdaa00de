"""Whether Kueue runs with fair sharing, as the queue reader decides it over the test API
server: Kueue's Configuration (kueue-manager-config) as the cycle's cluster read found it,
with no request of the reader's own; the status Kueue writes where the Configuration is
unreadable; and which source decided, said in the notes."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.kueue.queues import KueueQueues
from autoscaler.domain.kueue_config import V1BETA1, V1BETA2
from autoscaler.domain.queues.facts import QueueFacts
from autoscaler.settings.tree import ClusterSettings
from tests.support.builders import make_cluster_queue
from tests.support.kube_server import KubeServer

SETTINGS = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")
SOURCE = "kueue-system/kueue-manager-config"
AFS = "admission fair sharing orders its waiters by their LocalQueues' usage"


def config_map(text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": "kueue-system", "name": "kueue-manager-config"},
        "data": {"controller_manager_config.yaml": text},
    }


@pytest.fixture
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        yield running


def put_queues(server: KubeServer, *, status: bool) -> None:
    """Two ClusterQueues of one cohort; "afs" asks for admission fair sharing; `status`:
    Kueue's status.fairSharing on "cq" (written only while fair sharing is on)."""
    cq = make_cluster_queue("cq").cohort("shared").build()
    if status:
        cq["status"] = {"fairSharing": {"weightedShare": 0}}
    afs = make_cluster_queue("afs").cohort("shared").build()
    afs["spec"]["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
    server.store.put(cq)
    server.store.put(afs)


def read_after_cycle(server: KubeServer) -> tuple[QueueFacts, list[str]]:
    """One cycle's cluster read (which reads the Configuration), then the queue read; the
    ConfigMap requests the queue read made."""
    client = KubeClient(api_client_for(server.configuration()), timeout=timedelta(seconds=5))
    cluster = KueueCluster(client=client, settings=SETTINGS)
    reader = KueueQueues(
        client=client,
        objects=cluster,
        logger=logging.getLogger("test.queues"),
        configuration=lambda: cluster.cycle_kueue_config,
    )
    cluster.list_workloads()
    server.requests.clear()
    facts = reader.read_queues()
    config_reads = [r.path for r in server.requests.all() if r.path.endswith("/configmaps")]
    return facts, config_reads


def test_the_configuration_turns_fair_sharing_on_without_any_status(server: KubeServer) -> None:
    server.store.put(config_map(f"apiVersion: {V1BETA2}\nkind: Configuration\nfairSharing: {{}}\n"))
    put_queues(server, status=False)

    facts, config_reads = read_after_cycle(server)

    assert config_reads == []  # the cycle's reading: no request of the queue reader's own
    assert facts.queues["cq"].fair_sharing and facts.queues["afs"].fair_sharing
    assert facts.fair_order.source == f"Kueue's Configuration {SOURCE}"
    assert facts.notes == (
        f"fair sharing on per Kueue's Configuration {SOURCE}; heads ordered with "
        "FairSharingPrioritizeNonBorrowing on (Kueue's default), PrioritySortingWithinCohort "
        "on (Kueue's default)",
    )
    # No admissionFairSharing in the Configuration: Kueue ignores the queue's admissionMode.
    assert facts.queues["afs"].order_unknown == ()


def test_the_configuration_outweighs_a_stale_status(server: KubeServer) -> None:
    text = f"apiVersion: {V1BETA1}\nkind: Configuration\nfairSharing:\n  enable: false\n"
    server.store.put(config_map(text))
    put_queues(server, status=True)

    facts, _ = read_after_cycle(server)

    assert not facts.queues["cq"].fair_sharing
    assert facts.notes == () and facts.fair_order.source == ""


def test_its_gates_order_the_heads_and_admission_fair_sharing_stays_unknown_when_on(
    server: KubeServer,
) -> None:
    text = (
        f"apiVersion: {V1BETA2}\nkind: Configuration\nfairSharing: {{}}\n"
        "admissionFairSharing:\n  usageHalfLifeTime: 168h\n"
        "featureGates:\n  FairSharingPrioritizeNonBorrowing: false\n"
    )
    server.store.put(config_map(text))
    put_queues(server, status=False)

    facts, _ = read_after_cycle(server)

    assert (facts.fair_order.prioritize_non_borrowing, facts.fair_order.priority_sorting) == (
        False,
        True,
    )
    assert f"FairSharingPrioritizeNonBorrowing off in {SOURCE}" in facts.notes[0]
    assert facts.queues["afs"].order_unknown == (AFS,)


def test_unreadable_the_status_kueue_writes_decides_and_the_note_says_why(
    server: KubeServer,
) -> None:
    put_queues(server, status=True)  # no kueue-manager-config: not found

    facts, _ = read_after_cycle(server)

    assert facts.queues["cq"].fair_sharing
    assert facts.fair_order.source.startswith("status.fairSharing on ClusterQueue cq (cannot read")
    assert "not found" in facts.notes[0]
    assert facts.queues["afs"].order_unknown == (AFS,)  # the Configuration cannot say
