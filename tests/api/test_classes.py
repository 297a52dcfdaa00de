"""The usage class over real HTTP (ISSUE 16): each workload's state is its class, with the
evidence lines and, when idle-held, how many GPUs sat idle; /metrics counts the new classes;
the OpenAPI document says what each class means.

The classifier is another module's; here a cycle's snapshot is republished with the classes
it would have given, and every answer is read from that snapshot as in service."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from autoscaler.domain.models import Action, Decision
from tests.api.rig import ApiRig
from tests.api.test_client import cli
from tests.support.decision_builders import (
    DRIVER_ATTACHED,
    FB_CLIMBING,
    a_decision,
    with_decision,
)


def classify(rig: ApiRig, **classes: Decision) -> None:
    """Run a cycle, then publish it with each owner's workload given its class."""
    snapshot = rig.cycle()
    rows = tuple(
        with_decision(row, classes[row.info.owner.name])
        if row.info.owner and row.info.owner.name in classes
        else row
        for row in snapshot.workloads
    )
    rig.store.publish(replace(snapshot, workloads=rows))


@pytest.mark.parametrize(
    ("decision", "state", "evidence", "idle_held"),
    [
        pytest.param(
            a_decision("team-a", "rc").loading().seen(FB_CLIMBING).holding(4).build(),
            "loading",
            [FB_CLIMBING],
            0,
            id="loading-fb-climbing-at-near-zero-compute",
        ),
        pytest.param(
            a_decision("team-a", "rc").idle_held(2, of=4).build(),
            "idle-held",
            [],
            2,
            id="idle-held-2-of-4-gpus-at-zero",
        ),
        pytest.param(
            a_decision("team-a", "rc").idle().seen(DRIVER_ATTACHED).holding(4).build(),
            "idle",
            [DRIVER_ATTACHED],
            0,
            id="idle-notebook-with-a-driver-attached",
        ),
        pytest.param(
            a_decision("team-a", "rc").idle().holding(4).build(),
            "idle",
            [],
            0,
            id="idle-holding-60-gib-flat-shows-no-evidence",
        ),
    ],
)
def test_a_workload_reads_with_its_class_evidence_and_idle_held_count(
    rig: ApiRig, decision: Decision, state: str, evidence: list[str], idle_held: int
) -> None:
    name = rig.add_raycluster("team-a", "alice-rc", gpus=4)
    classify(rig, **{"alice-rc": decision})

    one = rig.reader.get(f"/api/v1/workloads/team-a/{name}").json()
    [listed] = rig.reader.get("/api/v1/workloads").json()["items"]

    for body in (one, listed):
        assert (body["state"], body["evidence"], body["idleHeldGpus"]) == (
            state,
            evidence,
            idle_held,
        )
        assert body["gpus"] == 4


def test_the_list_can_be_filtered_by_the_new_classes(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc", gpus=4)
    rig.add_raycluster("team-b", "bob-rc", gpus=4)
    classify(
        rig,
        **{
            "alice-rc": a_decision("team-a", "rc").loading().seen(FB_CLIMBING).build(),
            "bob-rc": a_decision("team-b", "rc").idle_held(2, of=4).build(),
        },
    )

    def owners(state: str) -> list[str]:
        items = rig.reader.get("/api/v1/workloads", params={"state": state}).json()["items"]
        return [item["owner"]["name"] for item in items]

    assert owners("loading") == ["alice-rc"]
    assert owners("idle-held") == ["bob-rc"]


def test_explain_carries_the_class_and_its_evidence(rig: ApiRig) -> None:
    name = rig.add_raycluster("team-a", "alice-rc", gpus=4)
    classify(rig, **{"alice-rc": a_decision("team-a", "rc").idle_held(2, of=4).seen("x").build()})

    found = rig.reader.get(f"/api/v1/workloads/team-a/{name}/explain").json()["workload"]

    assert (found["state"], found["evidence"], found["idleHeldGpus"]) == ("idle-held", ["x"], 2)


def test_metrics_count_loading_and_idle_held_workloads_by_their_state_label(
    rig: ApiRig,
) -> None:
    rig.add_raycluster("team-a", "alice-rc", gpus=4)
    rig.add_raycluster("team-b", "bob-rc", gpus=4)
    classify(
        rig,
        **{
            "alice-rc": a_decision("team-a", "rc").loading().build(),
            "bob-rc": a_decision("team-b", "rc").idle_held(2, of=4).build(),
        },
    )

    lines = rig.http.get("/metrics").text.splitlines()

    assert 'idle_gpu_autoscaler_workloads{state="loading"} 1.0' in lines
    assert 'idle_gpu_autoscaler_workloads{state="idle-held"} 1.0' in lines
    assert 'idle_gpu_autoscaler_workloads{state="idle"} 0.0' in lines


def test_the_openapi_document_lists_and_explains_the_five_classes(shared: ApiRig) -> None:
    schemas = shared.http.get("/openapi.json").json()["components"]["schemas"]
    view = schemas["WorkloadView"]["properties"]

    assert {"busy", "loading", "idle-held", "idle", "unknown"} <= set(schemas["State"]["enum"])
    for word in ("`busy`", "`loading`", "`idle-held`", "`idle`", "`unknown`", "maxLoading"):
        assert word in view["state"]["description"]
    assert view["evidence"]["type"] == "array"
    assert view["idleHeldGpus"]["type"] == "integer"


def test_the_cli_status_over_http_shows_idle_held_with_its_count_and_the_evidence(
    rig: ApiRig, tmp_path: Path
) -> None:
    rig.add_raycluster("team-a", "alice-rc", gpus=4)
    held = a_decision("team-a", "rc").idle_held(2, of=4).seen(DRIVER_ATTACHED).build()
    classify(rig, **{"alice-rc": held})

    code, listed, _ = cli(rig, "status", "-n", "team-a", tmp_path=tmp_path)
    code_one, one, _ = cli(rig, "status", "alice-rc", "-n", "team-a", tmp_path=tmp_path)

    assert code == code_one == 0
    assert "idle-held (2 of 4 GPUs idle)" in listed.splitlines()[1]
    assert "State:            idle-held (2 of 4 GPUs idle)" in one.splitlines()
    assert f"Evidence:         {DRIVER_ATTACHED}" in one.splitlines()


def test_the_decisions_trail_keeps_the_evidence_seen_when_the_loop_decided(
    rig: ApiRig, tmp_path: Path
) -> None:
    rig.add_raycluster("team-a", "alice-rc", peak=0.9, gpus=4)
    notebook = a_decision("team-a", "rc").idle().seen(DRIVER_ATTACHED).holding(4)
    classify(rig, **{"alice-rc": notebook.deciding(Action.WOULD_DEACTIVATE).build()})

    [record] = rig.reader.get("/api/v1/decisions").json()["items"]
    code, shown, _ = cli(rig, "decisions", "-n", "team-a", tmp_path=tmp_path)

    assert (record["action"], record["evidence"]) == ("would-deactivate", DRIVER_ATTACHED)
    assert code == 0 and shown.splitlines()[0].split()[-1] == "EVIDENCE"
    assert shown.splitlines()[1].endswith(DRIVER_ATTACHED)


def test_not_running_and_running_but_not_monitored_are_listed_counted_and_filtered(
    rig: ApiRig,
) -> None:
    """Quota held without work is its own class; a workload whose GPU pods run but which the
    GPU metrics miss stays unknown, and is listed (to those who may read it) and counted as a
    monitoring gap."""
    stuck = rig.add_raycluster("team-a", "alice-rc", gpus=2)
    gap = rig.add_raycluster("team-b", "bob-rc", gpus=2)
    rig.add_raycluster("team-b", "carol-rc", gpus=2)
    classify(
        rig,
        **{
            "alice-rc": a_decision("team-a", "rc").not_running().holding(2).build(),
            "bob-rc": a_decision("team-b", "rc").running_unmonitored().holding(2).build(),
            "carol-rc": a_decision("team-b", "rc").unknown("metrics unavailable").build(),
        },
    )

    listed = rig.reader.get("/api/v1/workloads").json()
    only_b = rig.reader.get("/api/v1/workloads", params={"namespace": "team-b"}).json()
    held = rig.reader.get("/api/v1/workloads", params={"state": "not-running"}).json()
    lines = rig.http.get("/metrics").text.splitlines()

    flags = {item["name"]: item["runningUnmonitored"] for item in listed["items"]}
    assert flags[gap] is True and flags[stuck] is False
    assert listed["runningUnmonitored"] == only_b["runningUnmonitored"] == [f"team-b/{gap}"]
    assert [item["name"] for item in held["items"]] == [stuck]
    assert "runningUnmonitored" not in held
    assert 'idle_gpu_autoscaler_workloads{state="not-running"} 1.0' in lines
    assert 'idle_gpu_autoscaler_running_unmonitored_workloads{namespace="team-b"} 1.0' in lines
    assert not any(gap in line for line in lines)  # /metrics needs no token: counts, no names
