"""Two replicas built as `serve` builds them (watch caches, guards, the loop's listeners, the
API), over the session's test API server, electing one leader on one Lease. Elections and
cycles are driven by hand on a simulated clock, no sleeping: whatever the loop writes is
written once, by the leader, and the follower sends no write request at all (read from the
server's request log). A person's change through the follower's API is served all the same."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kubernetes.leader import LeaderElector
from autoscaler.compose.api import Api
from autoscaler.compose.serve import build_replica
from autoscaler.compose.service import Service
from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.exemptions import EXEMPT_UNTIL_REQUESTED
from autoscaler.settings.tree import Settings
from tests.api.rig import Usage
from tests.support.builders import make_pod, make_raycluster, make_workload_for
from tests.support.fakes import FakeClock
from tests.support.kube_server import KubeServer, RecordedRequest

ROUND = timedelta(seconds=2)  # the Lease's retry period: one election round, one cycle each
CYCLES = 3
LOG = logging.getLogger("tests.ha.two_replicas")


def replica_settings(namespace: str) -> Settings:
    """Dry-run in the test's namespace; the Lease and the runtime state in one of its own."""
    return Settings.model_validate(
        {
            "policy": {"dryRun": True, "namespaces": {"include": [namespace]}},
            "cluster": {"serviceNamespace": f"{namespace}-svc", "requestTimeout": "5s"},
            "leaderElection": {"enabled": True},
            "watchCache": {
                "watchTimeout": "1s",
                "backoffInitial": "50ms",
                "backoffMax": "1s",
                "syncTimeout": "5s",
            },
            "api": {"host": "127.0.0.1", "port": 0},
        }
    )


@dataclass
class Replica:
    identity: str  # the pod's name: a restarted pod has a new one
    client: KubeClient
    elector: LeaderElector
    service: Service

    @property
    def token(self) -> str:
        return f"{self.identity}-token"

    def crash(self) -> None:
        """What SIGKILL leaves: the Lease stays held until it expires (the caches stop)."""
        self.service.stop()
        self.client.close()

    def stop(self) -> None:
        """SIGTERM: the Lease is released, so the other replica takes over at its next round."""
        self.elector.release()
        self.crash()


@dataclass
class Replicas:
    kube: KubeServer
    settings: Settings
    clock: FakeClock
    usage: Usage = field(default_factory=Usage)
    running: list[Replica] = field(default_factory=list)

    def start(self, identity: str) -> Replica:
        token = f"{identity}-token"
        client = KubeClient(api_client_for(self.kube.configuration(token=token)), timeout=ROUND)
        elector = LeaderElector(
            client=client,
            settings=self.settings.leader_election,
            namespace=self.settings.cluster.service_namespace,
            identity=identity,
            clock=self.clock,
            logger=LOG.getChild(identity),
        )
        service = build_replica(
            self.settings,
            client=client,
            clock=self.clock,
            logger=LOG.getChild(identity),
            elector=elector,
            metrics=self.usage,
        )
        replica = Replica(identity, client, elector, service)
        self.running.append(replica)
        return replica

    def rounds(self, count: int = CYCLES) -> None:
        """Each round: time moves on a retry period, every replica runs its election round,
        then its cycle, followers first, so a follower always sees a decision before the
        leader has written anything about it."""
        for _ in range(count):
            self.clock.advance(ROUND)
            for replica in self.running:
                replica.elector.try_acquire_or_renew()
            for replica in sorted(self.running, key=lambda r: r.elector.leads()):
                replica.service.reconciler.run_once()

    def leader(self) -> Replica:
        [leader] = [r for r in self.running if r.elector.leads()]
        return leader

    def followers(self) -> list[Replica]:
        return [r for r in self.running if not r.elector.leads()]

    def crash(self, replica: Replica) -> None:
        self.running.remove(replica)
        replica.crash()

    def stop(self, replica: Replica) -> None:
        self.running.remove(replica)
        replica.stop()

    def mark(self) -> int:
        """Where the request log stands now, for `writes_by(..., since=)`."""
        return len(self.kube.requests.all())

    def writes_by(self, replica: Replica, *, since: int = 0) -> list[RecordedRequest]:
        sent = self.kube.requests.all()[since:]
        return [r for r in sent if r.method != "GET" and r.token == replica.token]

    def audit(self, action: str) -> list[dict[str, Any]]:
        """The audit trail as kept in the runtime-state ConfigMap."""
        cluster = self.settings.cluster
        config_map = self.kube.store.get(
            "configmaps", name=cluster.runtime_state_config_map, namespace=cluster.service_namespace
        )
        records = json.loads(config_map["data"]["audit"])
        return [record for record in records if record["action"] == action]

    def state_writes(self) -> list[RecordedRequest]:
        path = f"/api/v1/namespaces/{self.settings.cluster.service_namespace}/configmaps"
        return [r for r in self.kube.requests.writes() if r.path.startswith(path)]


@pytest.fixture
def replicas(kube: KubeServer, namespace: str) -> Iterator[Replicas]:
    clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
    pair = Replicas(kube, replica_settings(namespace), clock)
    yield pair
    for replica in list(pair.running):
        pair.crash(replica)


def an_idle_raycluster(
    replicas: Replicas, namespace: str, name: str, *, annotations: dict[str, str] | None = None
) -> str:
    """A RayCluster admitted three hours ago, its one GPU at 1 % since; its Workload's name."""
    at = replicas.clock.now() - timedelta(hours=3)
    builder = make_raycluster(namespace, name).head(gpus=1).queue("user-queue")
    for key, value in (annotations or {}).items():
        builder = builder.annotation(key, value)
    raycluster = _created(builder.build(), at)
    workload = _created(make_workload_for(raycluster).admitted(at=at).build(), at)
    pod_name = f"{name}-head-0"
    pod = make_pod(namespace, pod_name).owned_by_raycluster(raycluster).gpus(1).running(since=at)
    for obj in (raycluster, workload, _created(pod.build(), at)):
        replicas.kube.store.put(obj)
    replicas.usage.peaks[(namespace, pod_name)] = (0.01, 1)
    return str(workload["metadata"]["name"])


def _created(obj: dict[str, Any], at: datetime) -> dict[str, Any]:
    obj["metadata"]["creationTimestamp"] = time_text(at)
    return obj


def test_a_dry_run_decision_is_recorded_once_by_the_leader_across_restarts_of_either_replica(
    kube: KubeServer, namespace: str, replicas: Replicas
) -> None:
    name = an_idle_raycluster(replicas, namespace, "idle-rc")
    a, b = replicas.start("a"), replicas.start("b")

    replicas.rounds()
    assert (replicas.leader(), replicas.followers()) == (a, [b])
    assert replicas.writes_by(b) == []

    replicas.crash(b)  # the follower, killed and replaced
    b2, since = replicas.start("b-2"), replicas.mark()
    replicas.rounds()
    assert (replicas.leader(), replicas.followers()) == (a, [b2])
    assert replicas.writes_by(b2, since=since) == []

    replicas.stop(a)  # the leader, stopped and replaced: the Lease goes to the other at once
    a2, since = replicas.start("a-2"), replicas.mark()
    replicas.rounds()
    assert (replicas.leader(), replicas.followers()) == (b2, [a2])
    assert replicas.writes_by(a2, since=since) == []

    [record] = replicas.audit("would-deactivate")
    assert (record["target"], record["outcome"]) == (f"{namespace}/{name}", "dry-run: not patched")
    workload = kube.store.get("workloads.kueue.x-k8s.io", name=name, namespace=namespace)
    assert record["key"]["subject"] == workload["metadata"]["uid"]
    # One write of the runtime state in all: the first leader's; its successor found the
    # decision recorded and wrote nothing.
    assert [r.token for r in replicas.state_writes()] == [a.token]


def test_a_crashed_leaders_successor_does_not_record_the_decision_again(
    kube: KubeServer, namespace: str, replicas: Replicas
) -> None:
    an_idle_raycluster(replicas, namespace, "idle-rc")
    a, b = replicas.start("a"), replicas.start("b")
    replicas.rounds()
    assert replicas.leader() == a

    replicas.crash(a)  # the Lease stays held until it expires
    replicas.rounds(1)
    assert replicas.followers() == [b]
    replicas.rounds(8)  # a lease duration (15 s) and more
    assert replicas.leader() == b

    assert len(replicas.audit("would-deactivate")) == 1


def test_an_exemption_beyond_the_maximum_is_cut_once_by_the_leader_alone(
    kube: KubeServer, namespace: str, replicas: Replicas
) -> None:
    now = replicas.clock.now()
    requested = time_text(now + timedelta(days=30))
    an_idle_raycluster(replicas, namespace, "long-rc", annotations={keys.EXEMPT_UNTIL: requested})
    a, b = replicas.start("a"), replicas.start("b")

    replicas.rounds()
    replicas.crash(b)
    replicas.start("b-2")
    replicas.rounds()

    owner_patches = [r for r in kube.requests.writes() if r.path.startswith("/apis/ray.io/")]
    assert owner_patches and {r.token for r in owner_patches} == {a.token}
    assert len(replicas.audit("cut-exemption")) == 1
    owner = kube.store.get("rayclusters.ray.io", name="long-rc", namespace=namespace)
    annotations = owner["metadata"]["annotations"]
    assert annotations[EXEMPT_UNTIL_REQUESTED] == requested
    assert annotations[keys.EXEMPT_UNTIL] == time_text(now + ROUND + timedelta(days=7))


def test_a_persons_exemption_through_the_followers_api_is_served_and_audited(
    kube: KubeServer, namespace: str, replicas: Replicas
) -> None:
    name = an_idle_raycluster(replicas, namespace, "alice-rc")
    replicas.start("a")
    b = replicas.start("b")
    replicas.rounds(1)
    kube.reviews.add_token("alice-ha-token", username="alice-ha", groups=("system:authenticated",))
    kube.reviews.allow(
        user="alice-ha",
        verb="patch",
        group="ray.io",
        resource="rayclusters",
        namespace=namespace,
        reason="alice edits her namespace",
    )
    [api] = [server for server in b.service.servers if isinstance(server, Api)]
    since = replicas.mark()

    api.start()
    try:
        answer = httpx.put(
            f"http://127.0.0.1:{api.server.port}/api/v1/workloads/{namespace}/{name}/exemption",
            json={"duration": "4h", "reason": "presenting"},
            headers={"Authorization": "Bearer alice-ha-token"},
            timeout=10,
        )
    finally:
        api.stop()

    assert b in replicas.followers()
    assert answer.status_code == 200, answer.text
    changes = [r for r in replicas.writes_by(b, since=since) if "k8s.io" not in r.path]
    assert [r.method for r in changes] == ["PATCH", "PUT"]  # not the token and access reviews
    assert changes[0].path == f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters/alice-rc"
    [record] = replicas.audit("exempt")
    assert record["actor"] == "alice-ha" and record["reason"].endswith(": presenting")
