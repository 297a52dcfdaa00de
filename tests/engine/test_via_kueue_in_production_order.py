"""Rule `reclaim: via-kueue` in production order (docs/RECLAIM.md), as
`test_policy_in_production_order.py` drives the service: built by the composition root from
`Settings` over fakes of the ports, a fake clock moved one loop interval per cycle, and here a
fake of Kueue's Configuration (the `KueueFeatures` port) saying whether the PriorityBoost gate
is on. Kueue's own preemption is played on the fake cluster as Kueue records it on the victim
(pkg/scheduler/preemption/preemption.go `IssuePreemptions`: Evicted=True reason Preempted and
Preempted=True, the message naming the preemptor's UID)."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from autoscaler.domain import annotations as keys
from autoscaler.domain.kueue_config import (
    KueueConfiguration,
    gate_served,
    unreadable,
)
from autoscaler.domain.models import Action, Preemption, State, WorkloadRef
from autoscaler.settings.tree import Settings
from tests.engine.test_policy_in_production_order import (
    INTERVAL,
    LEAD,
    NOW,
    NS,
    WINDOW,
    Fleet,
    busy,
    idle_since,
)
from tests.support.domain_builders import a_workload
from tests.support.loop_builders import a_service

SOURCE = "kueue-system/kueue-manager-config"
GATE_ON = KueueConfiguration(source=SOURCE, feature_gates={"PriorityBoost": True})
GATE_OFF = KueueConfiguration(source=SOURCE, feature_gates={"PriorityBoost": False})
GATE_UNNAMED = KueueConfiguration(source=SOURCE)
UNREADABLE = unreadable(SOURCE, f"cannot read {SOURCE}: 403 Forbidden")
BOOST = Settings().policy.via_kueue.priority_boost
VIA_KUEUE: dict[str, Any] = {
    "policy": {"dryRun": False},
    "rules": [{"name": "default", "reclaim": "via-kueue"}],
}


class FakeKueueFeatures:
    def __init__(self, config: KueueConfiguration) -> None:
        self.config = config
        self.reads = 0

    def kueue_configuration(self) -> KueueConfiguration:
        self.reads += 1
        return self.config


def a_fleet(
    readings: dict[str, Any], *, config: KueueConfiguration = GATE_ON, logger: logging.Logger
) -> tuple[Fleet, FakeKueueFeatures]:
    fleet = Fleet(readings, settings=VIA_KUEUE)
    features = FakeKueueFeatures(config)
    fleet.service = a_service(
        fleet.settings,
        cluster=fleet.cluster,
        metrics=fleet.metrics,
        clock=fleet.clock,
        logger=logger,
        features=features,
    )
    return fleet, features


def preempt(fleet: Fleet, name: str, *, by: str) -> None:
    """Kueue preempts `name` for the pending Workload `by` (added to the cluster)."""
    waiter = replace(a_workload(NS, by).build(), admitted=False, admitted_at=None)
    message = (
        f"Preempted to accommodate a workload (UID: {waiter.uid}, JobUID: j-1) due to "
        "prioritization in the ClusterQueue; preemptor path: /cq; preemptee path: /cq"
    )
    assert "UID: " in message
    [victim] = [w for w in fleet.cluster.workloads if w.ref.name == name]
    evicted = replace(
        victim,
        admitted=False,
        admitted_at=None,
        evicted_reason="Preempted",
        evicted_at=fleet.clock.now(),
        preemption=Preemption(waiter.uid, "InClusterQueue", fleet.clock.now()),
    )
    fleet.cluster.workloads[fleet.cluster.workloads.index(victim)] = evicted
    fleet.cluster.workloads.append(waiter)


def stops_recorded(fleet: Fleet, name: str) -> list[Any]:
    """The durable audit records of marks and stops of `name`, oldest first."""
    found = [
        r
        for r in fleet.service.shared.store.read().audit
        if r.target == f"{NS}/{name}" and r.action in ("mark-for-preemption", "deactivate")
    ]
    return sorted(found, key=lambda r: r.at)


@pytest.fixture
def log() -> logging.Logger:
    return logging.getLogger("test.via-kueue")


def test_no_mark_before_the_notice_has_run_then_one_mark_and_no_stop(
    log: logging.Logger,
) -> None:
    fleet, _ = a_fleet({"rc": idle_since(NOW - 3 * WINDOW)}, logger=log)

    fleet.run_until(NOW + LEAD)  # warned at NOW, the notice runs until NOW + LEAD
    assert fleet.when("rc", Action.WARN) == [NOW]
    assert fleet.when("rc", Action.MARK) == []
    assert keys.PRIORITY_BOOST not in fleet.annotations("rc")

    fleet.run_until(NOW + LEAD + 5 * INTERVAL)
    assert fleet.when("rc", Action.MARK) == [NOW + LEAD]
    annotations = fleet.annotations("rc")
    assert annotations[keys.PRIORITY_BOOST] == str(BOOST)
    assert annotations[keys.MARKED_AT] == keys.time_text(NOW + LEAD)
    assert fleet.writes("rc", "deactivate") == [], "Kueue decides; nothing stops it meanwhile"
    assert "marked for Kueue's preemption since" in fleet.decision("rc").reason
    assert [r.action for r in stops_recorded(fleet, "rc")] == ["mark-for-preemption"]


@pytest.mark.parametrize("answer", ["busy", "exempt", "snooze"])
def test_the_mark_is_removed_when_busy_again_exempted_or_snoozed(
    answer: str, log: logging.Logger
) -> None:
    fleet, _ = a_fleet({"rc": idle_since(NOW - 3 * WINDOW)}, logger=log)
    fleet.run_until(NOW + LEAD + INTERVAL)
    assert keys.PRIORITY_BOOST in fleet.annotations("rc")

    [w] = [w for w in fleet.cluster.workloads if w.ref.name == "rc"]
    index = fleet.cluster.workloads.index(w)
    later = keys.time_text(fleet.clock.now() + timedelta(hours=1))
    if answer == "busy":
        fleet.readings["rc"] = busy
    elif answer == "exempt":
        exempt = {**w.annotations, keys.EXEMPT_UNTIL: later, keys.EXEMPT_BY: "alice"}
        fleet.cluster.workloads[index] = replace(w, annotations=exempt)
    else:
        snoozed = {**w.annotations, keys.SNOOZED_UNTIL: later, keys.SNOOZED_BY: "alice"}
        fleet.cluster.workloads[index] = replace(w, annotations=snoozed)
    at = fleet.clock.now()
    fleet.cycle()

    assert fleet.when("rc", Action.UNMARK) == [at]
    assert keys.PRIORITY_BOOST not in fleet.annotations("rc")
    assert keys.MARKED_AT not in fleet.annotations("rc")
    assert fleet.writes("rc", "deactivate") == []


def test_marks_count_in_the_per_cycle_cap(log: logging.Logger) -> None:
    cap = Settings().policy.max_deactivations_per_cycle
    names = [f"rc{i}" for i in range(cap + 2)]
    fleet, _ = a_fleet({n: idle_since(NOW - 3 * WINDOW) for n in names}, logger=log)
    fleet.run_until(NOW + LEAD + INTERVAL)
    marked = [n for n in names if fleet.when(n, Action.MARK)]
    assert len(marked) == cap
    deferred = [n for n in names if fleet.decision(n).action is Action.DEFERRED]
    assert len(deferred) == 2


def test_a_kueue_preemption_of_a_marked_workload_deactivates_it_at_once_for_the_preemptor(
    log: logging.Logger,
) -> None:
    fleet, _ = a_fleet({"rc": idle_since(NOW - 3 * WINDOW)}, logger=log)
    fleet.run_until(NOW + LEAD + INTERVAL)
    preempt(fleet, "rc", by="waiter")
    at = fleet.clock.now()
    fleet.cycle()

    assert fleet.when("rc", Action.DEACTIVATE) == [at]
    [(_, audit)] = [a for a in fleet.cluster.audits if a[0] == WorkloadRef(NS, "rc")]
    assert audit.beneficiary == f"{NS}/waiter"
    events = [c for c, ref in fleet.cluster.calls if ref == WorkloadRef(NS, "rc")]
    assert "announce" in events
    records = stops_recorded(fleet, "rc")
    assert [r.action for r in records] == ["mark-for-preemption", "deactivate"]
    assert f"{NS}/waiter" in records[-1].reason

    # Kueue keeps Evicted=True/Preempted after our patch: spec.active says it is stopped.
    fleet.cycle()
    assert fleet.decision("rc").state is State.DEACTIVATED
    assert len(fleet.writes("rc", "deactivate")) == 1


@pytest.mark.parametrize(
    "config", [GATE_OFF, GATE_UNNAMED, UNREADABLE], ids=["off", "unnamed", "unreadable"]
)
def test_without_the_gate_the_rule_does_nothing_at_all_and_says_so_once(
    config: KueueConfiguration, log: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    fleet, features = a_fleet({"rc": idle_since(NOW - 3 * WINDOW)}, config=config, logger=log)
    with caplog.at_level(logging.INFO):
        fleet.run_until(NOW + 2 * LEAD + 5 * INTERVAL)

    assert fleet.writes("rc") == [], "no warning, no mark, never a stop by another route"
    decision = fleet.decision("rc")
    assert decision.action is Action.NONE
    assert gate_served(config, "PriorityBoost").line in decision.reason
    said = [r for r in caplog.records if getattr(r, "gate", None) == "PriorityBoost"]
    assert [r.levelno for r in said] == [logging.WARNING], "one line, at the first cycle"
    assert gate_served(config, "PriorityBoost").line in said[0].getMessage()
    assert "rules with reclaim: via-kueue do nothing" in said[0].getMessage()
    assert features.reads == len(fleet.snapshots), "one read a cycle, never per workload"


def test_a_boost_someone_else_wrote_is_never_changed(log: logging.Logger) -> None:
    fleet, _ = a_fleet({"rc": idle_since(NOW - 3 * WINDOW)}, logger=log)
    [w] = fleet.cluster.workloads
    fleet.cluster.workloads[0] = replace(w, annotations={keys.PRIORITY_BOOST: "50"})
    fleet.run_until(NOW + LEAD + 5 * INTERVAL)
    assert fleet.annotations("rc")[keys.PRIORITY_BOOST] == "50"
    assert fleet.when("rc", Action.MARK) == []
    assert "not ours to change" in fleet.decision("rc").reason
