"""End to end, ISSUE 17's must-shows: the real `serve` process, with the KAI and plain-KubeRay
suspend actuators and RayJob handling on, on the test API server and the live Prometheus.

One namespace holds every kind of RayCluster the service must tell apart, each with its GPUs
at 0% on the live exporter (tests/support/beyond_rig.py): a plain one with `spec.suspend`
absent and one with it false, a KAI Scheduler one, one Kueue admits without its queue label,
one with Kueue's label and no Workload yet, a RayJob's (the job under Kueue), one someone
else suspended, a KAI one on fractional GPUs, a KAI one of a protected priority class. The
service acts on its own; then a person reactivates through REST and the CLI.

Every test checks what the service WROTE (the test API server's request log: only the
service speaks HTTP to it in this namespace) and what its REST snapshot says.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from autoscaler.domain import annotations as keys
from tests.conftest import LiveMetrics
from tests.support.beyond_rig import (
    PERSON,
    PROTECTED_CLASS,
    USER_KEY,
    USER_VALUE,
    BeyondRig,
    poll,
    wait_for,
)
from tests.support.kube_server import KubeServer, RecordedRequest

pytestmark = pytest.mark.slow

Object = dict[str, Any]
SUSPENDED_BY_US = ("plain", "plain-false", "kai")
DEACTIVATED_BY_KUEUE = ("unlabelled", "job")  # the owners of the Workloads deactivated
NEVER_WRITTEN = ("queued", "stopped-elsewhere", "shared", "inference")
ACTED_WITHIN_S = 60  # idle window 4s, coverage from a scrape a second, the service starting
MORE_CYCLES = 3  # after the stops: chances to touch what it must not
SUSPEND = {"spec": {"suspend": True}}
MERGE_PATCH = "application/merge-patch+json"


@pytest.fixture(scope="module")
def rig(
    kube_server: KubeServer, live_metrics: LiveMetrics, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BeyondRig]:
    files = tmp_path_factory.mktemp("beyond-kueue")
    with BeyondRig.running(kube_server, live_metrics, files=files) as rig:
        yield rig


@dataclass
class Story:
    """What was seen, step by step (each test checks one part of it)."""

    seeded: dict[str, Object]  # every RayCluster as its users applied it
    stopped: dict[str, Object]  # the ones we suspended, as suspended
    rows: list[Object]  # the REST snapshot once the stops were made, cycles later
    writes: dict[str, list[RecordedRequest]]  # the service's, per object, before any person
    by_rest: httpx.Response  # plain, reactivated through REST
    by_cli: dict[str, subprocess.CompletedProcess[str]]  # kai and plain-false, with the CLI
    refused: httpx.Response  # reactivating the one someone else suspended
    reactivated: dict[str, Object]  # right after each reactivation answered
    rows_after: list[Object]


def all_stopped(rig: BeyondRig) -> bool:
    return all(map(rig.suspended, SUSPENDED_BY_US)) and all(
        map(rig.deactivated, DEACTIVATED_BY_KUEUE)
    )


def raycluster_names(rig: BeyondRig) -> list[str]:
    return [*SUSPENDED_BY_US, "unlabelled", *NEVER_WRITTEN, rig.job_cluster]


@pytest.fixture(scope="module")
def story(rig: BeyondRig) -> Story:
    names = raycluster_names(rig)
    seeded = {name: rig.raycluster(name) for name in names}
    wait_for(lambda: all_stopped(rig), within=ACTED_WITHIN_S)
    settled = rig.cycles() + MORE_CYCLES
    poll(lambda: rig.cycles() >= settled, within=30, what=f"{MORE_CYCLES} more cycles")
    rows = rig.rows()
    writes = {name: rig.service_writes(f"rayclusters/{name}") for name in names}
    writes["job"] = rig.service_writes("rayjobs/job")
    stopped = {name: rig.raycluster(name) for name in SUSPENDED_BY_US}
    by_rest = rig.reactivate("plain", reason="back to work")
    reactivated = {"plain": rig.raycluster("plain")}
    by_cli = {}
    for name in ("kai", "plain-false"):
        by_cli[name] = rig.cli("reactivate", name, "-n", rig.namespace, "--reason", "back to work")
        reactivated[name] = rig.raycluster(name)
    refused = rig.reactivate("stopped-elsewhere", reason="mine now")
    settled = rig.cycles() + 2
    poll(lambda: rig.cycles() >= settled, within=30, what="two cycles after")
    return Story(seeded, stopped, rows, writes, by_rest, by_cli, refused, reactivated, rig.rows())


def touching_spec(writes: list[RecordedRequest]) -> list[Any]:
    return [r.body for r in writes if isinstance(r.body, dict) and "spec" in r.body]


def row_state(rig: BeyondRig, rows: list[Object], name: str) -> tuple[str, str]:
    row = rig.row(name, rows)
    assert row is not None, f"no row for {name}: {[r['name'] for r in rows]}"
    return row["state"], row["reason"]


# --- plain KubeRay: suspended with exactly spec.suspend, reactivated to exactly what it was


def test_an_idle_plain_raycluster_is_suspended_by_a_merge_patch_of_exactly_spec_suspend_true(
    rig: BeyondRig, story: Story
) -> None:
    writes = story.writes["plain"]
    suspends = [r for r in writes if isinstance(r.body, dict) and "spec" in r.body]
    assert [r.body for r in suspends] == [SUSPEND]
    assert suspends[0].method == "PATCH"
    assert suspends[0].content_type == MERGE_PATCH
    others = [r.body for r in writes if r not in suspends]
    assert all(set(body) == {"metadata"} for body in others), others  # annotations only
    record = writes.index(suspends[0]) - 1  # the audit annotations come first, guarded
    assert record >= 0
    assert writes[record].body["metadata"]["annotations"][keys.SUSPEND_WAS] == "absent"
    assert writes[record].body["metadata"]["resourceVersion"]
    assert story.stopped["plain"]["metadata"]["annotations"][keys.SUSPEND_WAS] == "absent"
    assert keys.DEACTIVATED_AT in story.stopped["plain"]["metadata"]["annotations"]
    assert row_state(rig, story.rows, "plain")[0] == "deactivated"


def test_reactivating_it_through_rest_restores_its_spec_exactly_with_suspend_absent_again(
    story: Story,
) -> None:
    assert story.by_rest.status_code == 200, story.by_rest.text
    before, after = story.seeded["plain"], story.reactivated["plain"]
    assert after["spec"] == before["spec"]
    assert "suspend" not in after["spec"]
    annotations = after["metadata"]["annotations"]
    assert keys.SUSPEND_WAS not in annotations
    assert annotations[keys.REACTIVATED_AT]
    assert annotations[USER_KEY] == USER_VALUE  # someone else's annotation is untouched


def test_the_reactivation_is_one_patch_that_removes_suspend_and_records_who(
    rig: BeyondRig, story: Story
) -> None:
    after = rig.service_writes("rayclusters/plain")[len(story.writes["plain"]) :]
    [undo] = touching_spec(after)
    assert undo["spec"] == {"suspend": None}  # a merge patch's null removes the field
    assert undo["metadata"]["annotations"][keys.SUSPEND_WAS] is None
    assert undo["metadata"]["resourceVersion"]  # 409 if it changed since it was read
    assert PERSON in undo["metadata"]["annotations"].values()


def test_a_raycluster_that_said_suspend_false_gets_false_back_when_reactivated_with_the_cli(
    story: Story,
) -> None:
    answer = story.by_cli["plain-false"]
    assert answer.returncode == 0, answer.stderr
    assert story.stopped["plain-false"]["metadata"]["annotations"][keys.SUSPEND_WAS] == "false"
    assert story.reactivated["plain-false"]["spec"] == story.seeded["plain-false"]["spec"]
    assert story.reactivated["plain-false"]["spec"]["suspend"] is False


# --- KAI Scheduler: the same, its labels kept; fractions unsupported; priority protected


def test_an_idle_kai_raycluster_is_suspended_the_same_way_and_reactivated_with_the_cli(
    rig: BeyondRig, story: Story
) -> None:
    assert touching_spec(story.writes["kai"]) == [SUSPEND]
    assert story.by_cli["kai"].returncode == 0, story.by_cli["kai"].stderr
    before, after = story.seeded["kai"], story.reactivated["kai"]
    assert after["spec"] == before["spec"]
    assert after["metadata"]["labels"] == before["metadata"]["labels"]
    assert keys.SUSPEND_WAS not in after["metadata"]["annotations"]
    assert keys.REACTIVATED_AT in after["metadata"]["annotations"]
    assert row_state(rig, story.rows, "kai")[0] == "deactivated"


def test_a_kai_raycluster_on_fractional_gpus_is_unsupported_and_never_suspended_at_zero_percent(
    rig: BeyondRig, story: Story
) -> None:
    state, reason = row_state(rig, story.rows, "shared")
    assert state == "unsupported"
    assert "gpu-fraction" in reason
    assert story.writes["shared"] == []
    assert not rig.suspended("shared")


def test_a_kai_raycluster_of_a_protected_priority_class_is_protected_and_never_suspended(
    rig: BeyondRig, story: Story
) -> None:
    row = rig.row("inference", story.rows)
    assert row is not None
    assert row["state"] == "protected"
    assert row["priorityClass"] == PROTECTED_CLASS
    assert story.writes["inference"] == []
    assert not rig.suspended("inference")


# --- Kueue's: only the Workload is ever deactivated


def test_a_kueue_managed_raycluster_without_the_queue_label_is_never_suspended_only_its_workload(
    rig: BeyondRig, story: Story
) -> None:
    workload = rig.workload_of("unlabelled")["metadata"]["name"]
    deactivations = [r for r in rig.service_writes(f"workloads/{workload}") if r.deactivates]
    assert len(deactivations) == 1
    assert touching_spec(story.writes["unlabelled"]) == []  # its annotations, as its owner's
    assert rig.raycluster("unlabelled")["spec"] == story.seeded["unlabelled"]["spec"]
    assert "queue-name" not in str(story.seeded["unlabelled"]["metadata"].get("labels"))
    assert [r["name"] for r in story.rows if r["name"] == "unlabelled"] == []  # no row of its own
    assert row_state(rig, story.rows, workload)[0] == "deactivated"


def test_a_raycluster_with_kueues_queue_label_and_no_workload_yet_is_never_touched(
    rig: BeyondRig, story: Story
) -> None:
    assert story.writes["queued"] == []
    assert not rig.suspended("queued")
    assert rig.row("queued", story.rows) is None


def test_a_rayjob_under_kueue_is_deactivated_through_its_workload_never_its_raycluster(
    rig: BeyondRig, story: Story
) -> None:
    workload = rig.workload_of("job")["metadata"]["name"]
    deactivations = [r for r in rig.service_writes(f"workloads/{workload}") if r.deactivates]
    assert len(deactivations) == 1
    assert row_state(rig, story.rows, workload)[0] == "deactivated"
    assert touching_spec(story.writes["job"]) == []  # the RayJob: its annotations at most
    assert story.writes[rig.job_cluster] == []
    assert not rig.suspended(rig.job_cluster)
    # Its RayJob's Workload is its row: a second one would count its GPUs twice.
    assert rig.row(rig.job_cluster, story.rows) is None


# --- someone else's suspension


def test_a_raycluster_suspended_by_someone_else_is_reported_and_never_written(
    rig: BeyondRig, story: Story
) -> None:
    state, reason = row_state(rig, story.rows, "stopped-elsewhere")
    assert state == "deactivated"
    assert "spec.suspend" in reason
    assert rig.service_writes("rayclusters/stopped-elsewhere") == []
    assert rig.raycluster("stopped-elsewhere") == story.seeded["stopped-elsewhere"]


def test_reactivating_what_someone_else_suspended_is_refused_with_a_reason(
    rig: BeyondRig, story: Story
) -> None:
    assert story.refused.status_code == 409, story.refused.text
    assert "not suspended by this service" in story.refused.json()["detail"]
    assert rig.raycluster("stopped-elsewhere")["spec"]["suspend"] is True


def test_after_the_reactivations_the_rows_say_active_again_and_nothing_else_changed(
    rig: BeyondRig, story: Story
) -> None:
    for name in SUSPENDED_BY_US:
        row = rig.row(name, story.rows_after)
        assert row is not None and row["active"] is True, row
        assert touching_spec(rig.service_writes(f"rayclusters/{name}")[len(story.writes[name]) :])
    for name in NEVER_WRITTEN:
        assert rig.service_writes(f"rayclusters/{name}") == [], name
