"""Exemptions on an owner the service never writes (a batch Job; likewise a StatefulSet, a
Deployment, a pod: docs/WORKLOADS.md), over the test API server: a person's over-long value
on the Job is bounded once on its Workload and the bound holds; taking away an exemption that
lives on the Job is a 409 naming the kubectl command, never a success; a snooze, which lives on
the Workload only, is removed there."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.exemptions import EXEMPT_REPLACES
from tests.api.rig import ApiRig
from tests.api.test_client import cli
from tests.support.builders import make_workload
from tests.support.domain_builders import a_policy

NS, JOB = "team-a", "train"
WORKLOAD = "job-train"
WEEK = timedelta(days=7)  # the default rule's exemptions.maxDuration
REMOVE = f"kubectl annotate job {JOB} -n {NS} {keys.EXEMPT_UNTIL}-"


@pytest.fixture
def rig() -> Iterator[ApiRig]:
    policy = a_policy(dry_run=True, kinds=("RayCluster", "Job"))  # the limits apply dry too
    with ApiRig(owner_kinds=("Job",), policy=policy) as rig:
        yield rig


def add_job(rig: ApiRig, annotations: dict[str, str]) -> None:
    """A batch Job with a person's annotations and its admitted Workload, as Kueue makes it."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": JOB, "namespace": NS, "uid": "job-uid", "annotations": annotations},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
    }
    rig.kube.store.put(job)
    workload = make_workload(NS, WORKLOAD).owned_by(job).pod_set("main").queue("user-queue")
    rig.kube.store.put(workload.admitted(at=rig.now - timedelta(hours=3)).build())


def workload_annotations(rig: ApiRig) -> dict[str, Any]:
    return dict(rig.workload(NS, WORKLOAD)["metadata"].get("annotations", {}))


def changes(rig: ApiRig) -> list[str]:
    """The paths of the writes to namespaced objects (token and access reviews left out)."""
    return [r.path for r in rig.kube.requests.writes() if "/namespaces/" in r.path]


def writes_to_jobs(rig: ApiRig) -> list[str]:
    return [path for path in changes(rig) if "/jobs" in path]


def test_an_over_long_value_on_the_job_is_bounded_once_on_its_workload(rig: ApiRig) -> None:
    asked = time_text(rig.now + timedelta(days=30))
    add_job(rig, {keys.EXEMPT_UNTIL: asked})
    bound = time_text(rig.now + WEEK)

    for _ in range(3):
        assert rig.cycle().workloads[0].decision.state == "exempt"
        rig.clock.advance(timedelta(minutes=1))

    patches = [r for r in rig.kube.requests.writes() if "/workloads/" in r.path]
    assert len(patches) == 1, "the bound is written once, not every cycle"
    assert workload_annotations(rig)[keys.EXEMPT_UNTIL] == bound
    assert workload_annotations(rig)[EXEMPT_REPLACES] == asked
    assert writes_to_jobs(rig) == []
    records = rig.reader.get("/api/v1/decisions").json()["items"]
    assert [r["action"] for r in records].count("cut-exemption") == 1


def test_removing_an_exemption_a_person_set_on_the_job_is_a_409_naming_the_command(
    rig: ApiRig, tmp_path: Path
) -> None:
    add_job(rig, {keys.EXEMPT_UNTIL: time_text(rig.now + timedelta(days=2))})
    rig.cycle()
    rig.kube.requests.clear()

    answer = rig.reader.delete(f"/api/v1/workloads/{NS}/{WORKLOAD}/exemption")
    code, _out, err = cli(rig, "unexempt", WORKLOAD, "-n", NS, user="admin", tmp_path=tmp_path)

    assert answer.status_code == 409
    detail = answer.json()["detail"]
    assert f"Job {NS}/{JOB} is exempt by its own annotation" in detail
    assert detail.endswith(REMOVE)
    assert (code, err.count(REMOVE)) == (1, 1), "the command line shows the same line"
    assert err.startswith("error: 409 Conflict: ")
    assert changes(rig) == [], "nothing written, nothing claimed"
    assert rig.cycle().workloads[0].decision.state == "exempt"


def test_an_api_exemption_replaces_the_jobs_value_and_removing_it_still_names_the_job(
    rig: ApiRig,
) -> None:
    on_job = time_text(rig.now + timedelta(days=30))
    add_job(rig, {keys.EXEMPT_UNTIL: on_job})
    rig.cycle()  # bounded to a week on the Workload
    body = {"duration": "2h", "reason": "a short one instead"}

    put = rig.reader.put(f"/api/v1/workloads/{NS}/{WORKLOAD}/exemption", json=body)
    rig.cycle()

    assert put.status_code == 200, put.text
    assert put.json()["annotated"] == f"Workload {NS}/{WORKLOAD}"
    assert workload_annotations(rig)[keys.EXEMPT_UNTIL] == time_text(rig.now + timedelta(hours=2))
    assert workload_annotations(rig)[EXEMPT_REPLACES] == on_job  # the Job's value stays replaced
    removed = rig.reader.delete(f"/api/v1/workloads/{NS}/{WORKLOAD}/exemption")
    assert removed.status_code == 409 and removed.json()["detail"].endswith(REMOVE)
    assert writes_to_jobs(rig) == []


def test_once_the_job_no_longer_holds_one_removing_the_workloads_copy_succeeds(
    rig: ApiRig,
) -> None:
    add_job(rig, {keys.EXEMPT_UNTIL: time_text(rig.now + timedelta(days=30))})
    rig.cycle()
    job = rig.kube.store.get("jobs.batch", name=JOB, namespace=NS)
    job["metadata"]["annotations"] = {}  # kubectl annotate job train exempt-until-
    rig.kube.store.put(job)

    answer = rig.reader.delete(f"/api/v1/workloads/{NS}/{WORKLOAD}/exemption")

    assert answer.status_code == 200, answer.text
    assert answer.json()["annotated"] == f"Workload {NS}/{WORKLOAD}"
    assert not any(key.startswith(keys.PREFIX + "exempt") for key in workload_annotations(rig))
    assert writes_to_jobs(rig) == []


def test_a_snooze_on_a_job_owned_workload_is_removed_from_the_workload_never_the_job(
    rig: ApiRig,
) -> None:
    add_job(rig, {})
    rig.cycle()
    snoozed = rig.reader.post(
        f"/api/v1/workloads/{NS}/{WORKLOAD}/snooze", json={"duration": "1h", "reason": "x"}
    )
    assert snoozed.status_code == 200, snoozed.text

    removed = rig.reader.delete(f"/api/v1/workloads/{NS}/{WORKLOAD}/snooze")

    assert removed.status_code == 200, removed.text
    assert keys.SNOOZED_UNTIL not in workload_annotations(rig)
    assert writes_to_jobs(rig) == []
