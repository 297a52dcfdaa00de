"""Two snoozes granted from the same read of a Workload (two clicks on a link at once, a
click and a REST call) against the test API server with the real Kueue adapter: the first
applies, the second's patch carries the resourceVersion it read and is a Conflict, so the
link stays single-use and the day's count keeps every grant."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kueue.actuator import KueueActuator
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.core.errors import Conflict
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.notices.notice import NoticeRules
from autoscaler.domain.notices.snoozes import SnoozeGrant
from autoscaler.domain.policy.rules import Rule
from autoscaler.engine.acting.snooze import snooze
from autoscaler.settings.tree import ClusterSettings
from tests.support.builders import make_raycluster, make_workload_for
from tests.support.domain_builders import a_policy
from tests.support.kube_server import KubeServer

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NOW = T0 + timedelta(hours=2)
SETTINGS = ClusterSettings(service_namespace="iga", runtime_state_config_map="iga-state")
LOG = logging.getLogger("tests.snooze_race")


class FixedClock:
    def now(self) -> datetime:
        return NOW


@pytest.fixture
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        yield running
        assert running.errors == []


def connected(server: KubeServer) -> tuple[KueueCluster, KueueActuator]:
    client = KubeClient(api_client_for(server.configuration()), timeout=timedelta(seconds=5))
    cluster = KueueCluster(client=client, settings=SETTINGS)
    actuator = KueueActuator(client=client, workloads=cluster.workload_resource, clock=FixedClock())
    return cluster, actuator


def warned_workload(server: KubeServer, cluster: KueueCluster) -> WorkloadInfo:
    """An admitted RayCluster's Workload carrying the loop's warning, read once."""
    rc = make_raycluster("team-a", "rc").gpu_worker(replicas=1, gpus=1).build()
    warned_at = NOW - timedelta(minutes=5)
    workload = (
        make_workload_for(rc)
        .queue("user-queue")
        .admitted(at=T0)
        .annotation(keys.WARNED_AT, time_text(warned_at))
        .annotation(keys.STOP_PLANNED_AT, time_text(warned_at + timedelta(minutes=15)))
        .build()
    )
    server.store.put(rc)
    server.store.put(workload)
    (read,) = cluster.list_workloads()
    return read


def a_rule() -> Rule:
    return replace(a_policy().default_rule, notice=NoticeRules())


def grant(actuator: KueueActuator, read: WorkloadInfo, *, by: str, now: datetime) -> SnoozeGrant:
    until = now + timedelta(hours=4)
    return snooze(
        actuator, read, until=until, by=by, reason="x", rule=a_rule(), now=now, logger=LOG
    )


def test_the_second_of_two_snoozes_granted_from_the_same_read_is_a_conflict(
    server: KubeServer,
) -> None:
    cluster, actuator = connected(server)
    read = warned_workload(server, cluster)

    first = grant(actuator, read, by="link:a", now=NOW)
    with pytest.raises(Conflict):
        grant(actuator, read, by="link:b", now=NOW + timedelta(seconds=1))

    stored = server.store.get("workloads.kueue.x-k8s.io", name=read.ref.name, namespace="team-a")
    annotations = stored["metadata"]["annotations"]
    assert first.until is not None
    assert annotations[keys.SNOOZED_UNTIL] == time_text(first.until)
    assert annotations[keys.SNOOZED_BY] == "link:a", "the second grant wrote nothing"
    assert annotations[keys.SNOOZES] == time_text(NOW), "one grant, counted once"


def test_a_snooze_patch_names_the_resource_version_it_was_granted_from(
    server: KubeServer,
) -> None:
    cluster, actuator = connected(server)
    read = warned_workload(server, cluster)
    server.requests.clear()

    grant(actuator, read, by="alice", now=NOW)

    patch = server.requests.writes()[0]
    assert patch.body["metadata"]["resourceVersion"] == read.resource_version != ""
