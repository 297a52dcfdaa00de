"""What the API changes lives in Kubernetes: it survives a restart and the loop honours it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from tests.api.rig import ApiRig, grant_default_rights
from tests.support.kube_server import KubeServer


@pytest.fixture
def kube() -> Iterator[KubeServer]:
    with KubeServer(clock=lambda: datetime.now(UTC) - timedelta(hours=4)) as server:
        grant_default_rights(server)
        yield server
    assert server.errors == []


def deactivated(kube: KubeServer) -> list[str]:
    return sorted(r.path.rsplit("/", 1)[-1] for r in kube.requests.writes() if r.deactivates)


def test_exemptions_and_pauses_made_through_the_api_survive_a_restart_and_bind_the_loop(
    kube: KubeServer,
) -> None:
    with ApiRig(kube=kube, dry_run=True) as before:
        before.add_raycluster("team-a", "alice-rc", peak=0.01)
        before.add_raycluster("team-b", "bob-rc", peak=0.01)
        control = before.add_raycluster("team-c", "carol-rc", peak=0.01)
        before.cycle()
        exempted = before.http.put(
            "/api/v1/workloads/team-a/alice-rc/exemption",
            json={"duration": "4h", "reason": "presenting"},
            headers=before.as_user("alice"),
        )
        paused = before.http.post(
            "/api/v1/namespaces/team-b/pause",
            json={"reason": "migrating"},
            headers=before.as_user("bob"),
        )
        assert (exempted.status_code, paused.status_code) == (200, 200)
    kube.requests.clear()
    with ApiRig(kube=kube, dry_run=False) as restarted:  # a new process: new app, new loop
        restarted.usage.peaks = dict(before.usage.peaks)
        states = {row.ref.namespace: row.decision.state for row in restarted.cycle().workloads}
        assert states == {"team-a": "exempt", "team-b": "paused", "team-c": "idle"}
        assert deactivated(kube) == [control]  # the loop acts, but not on those two
        shown = restarted.reader.get("/api/v1/workloads/team-a/alice-rc").json()
        assert (shown["exemption"]["by"], shown["exemption"]["reason"]) == ("alice", "presenting")
        pauses = restarted.reader.get("/api/v1/pauses").json()
        assert pauses["paused"][0]["scope"] == "team-b"
        assert pauses["paused"][0]["by"] == "bob"


def test_a_service_pause_set_while_the_loop_runs_stops_its_next_action(kube: KubeServer) -> None:
    with ApiRig(kube=kube, dry_run=False) as rig:
        rig.add_raycluster("team-a", "alice-rc", peak=0.9)
        rig.cycle()
        response = rig.http.post(
            "/api/v1/pause", json={"reason": "incident"}, headers=rig.as_user("admin")
        )
        assert response.status_code == 200
        rig.usage.peaks = {key: (0.01, gpus) for key, (_peak, gpus) in rig.usage.peaks.items()}
        [row] = rig.cycle().workloads
        assert row.decision.state == "paused"
        assert deactivated(kube) == []
