"""The test API server's Kueue emulation preempts over stored objects, as Kueue writes them.

The expected answers and messages come from Kueue's own tests (kubernetes-sigs/kueue at
ff69552e): pkg/scheduler/preemption/preemption_test.go TestPreemption "preempt lowest
priority" (who is preempted, the Evicted and Preempted conditions and their message),
pkg/scheduler/preemption/common/preemption_policy_test.go TestSatisfiesPreemptionPolicy
"LowerPriority: boost makes low-priority immune to medium-priority preemption" (the boost
counts only with its gate on). Every object the emulation writes is validated against the
vendored CRDs.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.sim.kueue_model import KueueFeatures
from tests.support.builders import (
    make_cluster_queue,
    make_local_queue,
    make_resource_flavor,
    make_workload,
)
from tests.support.cluster_emulator import ClusterEmulator
from tests.support.crd_validation import assert_valid
from tests.support.kube_server import KubeServer
from tests.support.kueue_objects import JOB_UID_LABEL, PRIORITY_BOOST_ANNOTATION

NS = "team"
WORKLOADS = "workloads.kueue.x-k8s.io"
T0 = datetime(2026, 3, 2, 13, 0, tzinfo=UTC)
MESSAGE = (
    "Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization "
    "in the ClusterQueue; preemptor path: /standalone; preemptee path: /standalone"
)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def tick(self) -> None:
        self.now += timedelta(seconds=10)


@pytest.fixture
def kube() -> Iterator[KubeServer]:
    with KubeServer() as server:
        server.store.put(make_resource_flavor().build())
        queue = make_cluster_queue("standalone").quota(gpus=0, cpu=6).build()
        queue["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
        assert_valid(queue)
        server.store.put(queue)
        server.store.put(make_local_queue(NS, "lq").cluster_queue("standalone").build())
        yield server


def submit(kube: KubeServer, name: str, *, priority: int, cpu: int = 2, **extra: Any) -> None:
    builder = make_workload(NS, name).queue("lq").pod_set("main", cpu=cpu)
    builder.uid(extra.get("uid", f"uid-{name}"))
    for key, value in extra.get("annotations", {}).items():
        builder.annotation(key, value)
    obj = builder.label(JOB_UID_LABEL, extra.get("job_uid", f"job-{name}")).build()
    obj["spec"]["priority"] = priority
    assert_valid(obj)
    kube.store.put(obj)


def conditions(kube: KubeServer, name: str) -> dict[str, tuple[str, str, str]]:
    obj = kube.store.get(WORKLOADS, name=name, namespace=NS)
    assert_valid(obj)
    return {
        c["type"]: (c["status"], c["reason"], c["message"]) for c in obj["status"]["conditions"]
    }


def test_a_higher_priority_waiter_preempts_the_lowest_and_is_admitted_a_step_later(
    kube: KubeServer,
) -> None:
    clock = Clock()
    emulator = ClusterEmulator(kube, clock=clock, namespaces=[NS])
    for name, priority in (("low", -1), ("mid", 0), ("high", 1)):
        submit(kube, name, priority=priority)
    emulator.sync()
    clock.tick()
    submit(kube, "in", priority=1, uid="wl-in", job_uid="job-in")

    emulator.sync()

    assert conditions(kube, "low") == {
        "QuotaReserved": ("False", "PendingEvaluation", MESSAGE),
        "Admitted": ("False", "NoReservation", "The workload has no reservation"),
        "Evicted": ("True", "Preempted", MESSAGE),
        "Preempted": ("True", "InClusterQueue", MESSAGE),
        "Requeued": ("True", "Preempted", MESSAGE),
    }
    assert conditions(kube, "in")["QuotaReserved"] == (
        "False",
        "WaitingForPreemptedWorkloads",
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
        "default-flavor, 2 more needed. Pending the preemption of 1 workload(s)",
    )
    assert conditions(kube, "mid")["Admitted"][0] == "True"

    clock.tick()
    emulator.sync()
    assert conditions(kube, "in")["Admitted"][0] == "True"
    assert conditions(kube, "low")["Evicted"] == ("True", "Preempted", MESSAGE)


def test_a_preempted_workload_deactivated_keeps_kueues_preemption_conditions(
    kube: KubeServer,
) -> None:
    """Kueue's workload controller does not evict again a workload already evicted
    (pkg/controller/core/workload_controller.go): Evicted stays Preempted, Requeued True."""
    clock = Clock()
    emulator = ClusterEmulator(kube, clock=clock, namespaces=[NS])
    submit(kube, "low", priority=-1, cpu=6)
    emulator.sync()
    submit(kube, "in", priority=1, uid="wl-in", job_uid="job-in")
    clock.tick()
    emulator.sync()
    kube.store.patch(WORKLOADS, name="low", namespace=NS, patch={"spec": {"active": False}})
    clock.tick()
    emulator.sync()
    emulator.sync()

    after = conditions(kube, "low")
    assert after["Evicted"][:2] == ("True", "Preempted")
    assert after["Requeued"][:2] == ("True", "Preempted")
    assert conditions(kube, "in")["Admitted"][0] == "True"


@pytest.mark.parametrize("gate", [True, False], ids=["PriorityBoost-on", "PriorityBoost-off"])
def test_a_negative_boost_makes_an_equal_priority_workload_preemptible_only_behind_the_gate(
    kube: KubeServer, gate: bool
) -> None:
    """Effective priority = priority + boost, only with the gate on (pkg/util/priority/
    priority.go); LowerPriority needs the preemptor's effective priority strictly higher."""
    clock = Clock()
    emulator = ClusterEmulator(kube, clock=clock, namespaces=[NS], features=KueueFeatures(gate))
    submit(kube, "idle", priority=0, cpu=6, annotations={PRIORITY_BOOST_ANNOTATION: "-1000"})
    emulator.sync()
    submit(kube, "waiter", priority=0)
    clock.tick()
    emulator.sync()
    clock.tick()
    emulator.sync()

    assert conditions(kube, "waiter")["Admitted"][0] == ("True" if gate else "False")
    assert ("Preempted" in conditions(kube, "idle")) is gate
