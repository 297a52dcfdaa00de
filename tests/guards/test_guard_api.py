"""The guards through the API: the breaker in /readyz's body, its admin reset, and clearing
a contested mark, over real HTTP against the test API server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest

from autoscaler.adapters.state.guards import RuntimeGuardStore
from autoscaler.domain.guards.breaker import BreakerState
from autoscaler.domain.guards.screen import Contest, Deed
from autoscaler.domain.models import GuardReport, WorkloadRef
from tests.api.rig import SERVICE_NAMESPACE, STATE_CONFIG_MAP, ApiRig

COUNTS = "4 of 10 workloads busy last cycle turned idle"
OPEN = BreakerState(
    open=True, reason=f"{COUNTS}: team-b/bob-rc, team-c/carol-rc and 2 more", summary=COUNTS
)


@pytest.fixture
def rig() -> Iterator[ApiRig]:
    with ApiRig() as running:
        yield running
    assert running.kube.errors == []


def state_data(rig: ApiRig) -> dict[str, str]:
    found = rig.kube.store.get("configmaps", name=STATE_CONFIG_MAP, namespace=SERVICE_NAMESPACE)
    return dict(found["data"])


def change(rig: ApiRig, **fields: object) -> None:
    rig.api.context.state.change(lambda state: replace(state, **fields))  # type: ignore[arg-type]


def test_readiness_reports_an_open_breaker_without_failing_in_counts_only(rig: ApiRig) -> None:
    """/readyz answers without a token: it never names a workload (it listed the contested
    ones and the breaker's reason named a few, of every tenant, before)."""
    snapshot = rig.cycle()
    since = snapshot.taken_at - timedelta(minutes=2)
    report = GuardReport(
        breaker=replace(OPEN, since=since, normal_cycles=1),
        breaker_close_after=3,
        hourly_limit=20,
        deactivations_last_hour=7,
        deferred=2,
        contested=(WorkloadRef("team-a", "rc-1"),),
    )
    rig.store.publish(replace(snapshot, guards=report))
    response = rig.http.get("/readyz")
    assert response.status_code == 200
    assert response.json()["ready"] is True
    assert response.json()["guards"] == {
        "breaker": {
            "open": True,
            "since": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "reason": COUNTS,
            "normalCycles": 1,
            "closeAfter": 3,
        },
        "hourlyLimit": 20,
        "deactivationsLastHour": 7,
        "deferred": 2,
        "contestedCount": 1,
        "problems": [],
    }
    assert not {"rc-1", "bob-rc", "carol-rc"} & set(response.text.replace('"', " ").split())


@pytest.mark.parametrize(
    ("user", "reason"),
    [
        pytest.param("admin", OPEN.reason, id="names-for-an-admin"),
        pytest.param("alice", COUNTS, id="counts-for-anyone-else"),
    ],
)
def test_the_breakers_reason_names_workloads_only_to_an_admin(
    rig: ApiRig, user: str, reason: str
) -> None:
    change(rig, breaker=OPEN)
    response = rig.http.get("/api/v1/breaker", headers=rig.as_user(user))
    assert (response.status_code, response.json()["reason"]) == (200, reason)


def test_an_admin_resets_the_breaker_and_the_reset_is_audited(rig: ApiRig) -> None:
    change(rig, breaker=OPEN)
    assert rig.reader.get("/api/v1/breaker").json()["open"] is True
    response = rig.http.post(
        "/api/v1/breaker/reset", json={"reason": "exporter fixed"}, headers=rig.as_user("admin")
    )
    assert response.status_code == 200
    assert response.json()["open"] is False
    assert json.loads(state_data(rig)["breaker"])["open"] is False
    [record] = rig.api.context.state.read().audit
    assert (record.actor, record.action, record.reason) == (
        "admin",
        "reset-breaker",
        "exporter fixed",
    )


def test_resetting_a_closed_breaker_is_not_an_error(rig: ApiRig) -> None:
    response = rig.http.post(
        "/api/v1/breaker/reset", json={"reason": "just in case"}, headers=rig.as_user("admin")
    )
    assert (response.status_code, response.json()["open"]) == (200, False)


@pytest.mark.parametrize(
    ("user", "status"),
    [pytest.param("alice", 403, id="not-an-admin"), pytest.param(None, 401, id="no-token")],
)
def test_only_an_admin_may_reset_the_breaker(rig: ApiRig, user: str | None, status: int) -> None:
    change(rig, breaker=OPEN)
    headers = rig.as_user(user) if user else {}
    response = rig.http.post("/api/v1/breaker/reset", json={"reason": "r"}, headers=headers)
    assert response.status_code == status
    assert rig.api.context.state.read().breaker.open


def test_an_admin_clears_a_contested_mark_by_the_owners_name(rig: ApiRig) -> None:
    name = rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    ref = WorkloadRef("team-a", name)
    change(rig, contested={ref: Contest(since=rig.now, reason="undone 3 times")})
    response = rig.http.delete(
        "/api/v1/workloads/team-a/alice-rc/contested", headers=rig.as_user("admin")
    )
    assert response.status_code == 200
    assert (response.json()["workload"], response.json()["action"]) == (name, "uncontest")
    assert rig.api.context.state.read().contested == {}
    guards = RuntimeGuardStore(store=rig.api.context.state, audit_limit=200, clock=rig.clock)
    [cleared] = guards.recent(rig.now - timedelta(hours=1))
    assert (cleared.deed, cleared.workload) == (Deed.UNCONTESTED, ref)


def test_clearing_a_mark_that_is_not_there_is_a_conflict(rig: ApiRig) -> None:
    response = rig.http.delete(
        "/api/v1/workloads/team-a/nothing/contested", headers=rig.as_user("admin")
    )
    assert response.status_code == 409
    assert "not marked contested" in response.json()["detail"]


def test_only_an_admin_may_clear_a_mark(rig: ApiRig) -> None:
    ref = WorkloadRef("team-a", "rc")
    change(rig, contested={ref: Contest(since=rig.now, reason="x")})
    response = rig.http.delete(
        "/api/v1/workloads/team-a/rc/contested", headers=rig.as_user("alice")
    )
    assert response.status_code == 403
    assert ref in rig.api.context.state.read().contested
