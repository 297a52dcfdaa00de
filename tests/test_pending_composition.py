"""`serve` reads who waits from each enabled actuator's queueing system: Kueue's, KAI
Scheduler's, or both merged; a KAI-only cluster reads no kueue.x-k8s.io object."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.compose.managers import build_pending
from autoscaler.settings.tree import Settings
from tests.support.builders import kai_pod, make_kai_queue, make_podgroup
from tests.support.kube_server import KubeServer

LOG = logging.getLogger("test.pending")


class NoKueueObjects:
    """Kueue's queue objects: none, and every read counted."""

    def __init__(self) -> None:
        self.reads: list[str] = []

    def kueue_objects(self, plural: str) -> Sequence[Any]:
        self.reads.append(plural)
        return []


def with_actuators(*, kueue: bool, kai: bool) -> Settings:
    return Settings.model_validate(
        {"actuators": {"kueue": {"enabled": kueue}, "kai": {"enabled": kai}}}
    )


@pytest.fixture
def kube() -> Iterator[KubeServer]:
    with KubeServer() as server:
        server.store.put(make_kai_queue("team-b").allocated(gpus=0).build())
        server.store.put(make_podgroup("team-b", "pg", queue="team-b").pending().build())
        server.store.put(kai_pod("team-b", "pg-0", group="pg", gpus=1).build())
        yield server


def client_of(kube: KubeServer) -> KubeClient:
    return KubeClient(api_client_for(kube.configuration()), timeout=timedelta(seconds=5))


def test_a_kai_only_cluster_reads_kais_waiters_and_nothing_of_kueue(kube: KubeServer) -> None:
    objects = NoKueueObjects()
    pending = build_pending(
        with_actuators(kueue=False, kai=True), client=client_of(kube), objects=objects, logger=LOG
    )

    assert pending is not None
    facts = pending.read_queues()
    assert [str(w.ref) for w in facts.waiters] == ["team-b/pg"]
    assert objects.reads == []
    assert not [r for r in kube.requests.all() if "kueue.x-k8s.io" in r.path]


def test_with_kueue_and_kai_enabled_both_systems_waiters_are_read(kube: KubeServer) -> None:
    objects = NoKueueObjects()
    pending = build_pending(
        with_actuators(kueue=True, kai=True), client=client_of(kube), objects=objects, logger=LOG
    )

    assert pending is not None
    facts = pending.read_queues()
    assert facts.failure is None
    assert facts.source.endswith("+kai-podgroups")
    assert [str(w.ref) for w in facts.waiters] == ["team-b/pg"]
    assert "workloads" in objects.reads


def test_kueue_alone_reads_no_kai_object(kube: KubeServer) -> None:
    pending = build_pending(
        with_actuators(kueue=True, kai=False),
        client=client_of(kube),
        objects=NoKueueObjects(),
        logger=LOG,
    )

    assert pending is not None
    assert pending.read_queues().source != "kai-podgroups"
    assert not [r for r in kube.requests.all() if "scheduling.run.ai" in r.path]


def test_with_neither_actuator_nobody_reads_the_queues(kube: KubeServer) -> None:
    pending = build_pending(
        with_actuators(kueue=False, kai=False),
        client=client_of(kube),
        objects=NoKueueObjects(),
        logger=LOG,
    )

    assert pending is None
