"""`status` says who manages a workload (ISSUE 17) only where it matters: a Kueue-only fleet
reads exactly as before, and a list holding a RayCluster the service suspends itself (KAI,
plain KubeRay) gains a MANAGER column; the one-workload view says "Managed by" for those."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.client.render import terminal_safe
from autoscaler.client.workload_views import WORKLOAD_COLUMNS, workload, workloads
from tests.client.test_class_rendering import answer, field

Json = dict[str, Any]


def raycluster(name: str, manager: str, state: str = "idle") -> Json:
    """A RayCluster row as the REST answer carries it: named after itself, its own owner."""
    owner = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": name}
    return answer(state, gpus=1, name=name, owner=owner, manager=manager)


def listed(*items: Json) -> list[str]:
    return terminal_safe(workloads({"snapshot": {}, "items": list(items)})).splitlines()


@pytest.mark.parametrize(
    "manager",
    [pytest.param({}, id="answer-without-manager"), pytest.param({"manager": "kueue"}, id="kueue")],
)
def test_a_kueue_only_fleet_reads_exactly_as_before(manager: Json) -> None:
    before = listed(answer("idle"), answer("busy"))
    assert listed(answer("idle", **manager), answer("busy", **manager)) == before
    assert before[0].split() == list(WORKLOAD_COLUMNS)


@pytest.mark.parametrize("manager", ["kai", "kuberay"])
def test_a_raycluster_suspended_by_the_service_adds_a_manager_column(manager: str) -> None:
    header, kueue_line, own_line = listed(answer("busy"), raycluster("plain-rc", manager))

    assert header.split() == [WORKLOAD_COLUMNS[0], "MANAGER", *WORKLOAD_COLUMNS[1:]]
    assert kueue_line.split()[:2] == ["team-a", "kueue"]
    assert own_line.split()[:4] == ["team-a", manager, "RayCluster/plain-rc", "plain-rc"]


def test_an_unsupported_kai_raycluster_is_listed_with_its_state() -> None:
    header, line = listed(raycluster("kai-rc", "kai", state="unsupported"))
    cells = line.split()
    assert cells[header.split().index("STATE")] == "unsupported"


@pytest.mark.parametrize(
    ("body", "managed_by"),
    [
        pytest.param(raycluster("kai-rc", "kai"), "kai (spec.suspend)", id="kai"),
        pytest.param(raycluster("plain-rc", "kuberay"), "kuberay (spec.suspend)", id="kuberay"),
    ],
)
def test_one_raycluster_suspended_by_the_service_says_who_manages_it(
    body: Json, managed_by: str
) -> None:
    assert field(terminal_safe(workload(body)), "Managed by") == managed_by


def test_one_kueue_workload_reads_as_before() -> None:
    assert workload(answer("idle", manager="kueue")) == workload(answer("idle"))
    assert "Managed by" not in workload(answer("idle"))
