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

from autoscaler.api.presenters import workload_view
from autoscaler.domain import annotations as keys
from autoscaler.domain.kueue_config import (
    KueueConfiguration,
    gate_served,
    unreadable,
)
from autoscaler.domain.models import Action, Preemption, State, WorkloadRef
from autoscaler.domain.policy.management import HandsOff
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
    nan,
)
from tests.support.domain_builders import a_workload

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
    readings: dict[str, Any],
    *,
    config: KueueConfiguration = GATE_ON,
    logger: logging.Logger,
    policy: dict[str, Any] | None = None,
) -> tuple[Fleet, FakeKueueFeatures]:
    """`policy`: keys laid over VIA_KUEUE's `policy`."""
    settings = {**VIA_KUEUE, "policy": {**VIA_KUEUE["policy"], **(policy or {})}}
    features = FakeKueueFeatures(config)
    return Fleet(readings, settings=settings, features=features, logger=logger), features


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


def test_a_preempted_marked_workload_read_as_unknown_is_never_deactivated(
    log: logging.Logger,
) -> None:
    """Its owner's kind unreadable this cycle (its exemption cannot be seen): unknown."""
    fleet, _ = a_fleet({"rc": idle_since(NOW - 3 * WINDOW)}, logger=log)
    fleet.run_until(NOW + LEAD + INTERVAL)
    preempt(fleet, "rc", by="waiter")
    [victim] = [w for w in fleet.cluster.workloads if w.ref.name == "rc"]
    unknown = HandsOff(State.UNKNOWN, "its RayCluster rc cannot be read: 403 Forbidden")
    fleet.cluster.workloads[fleet.cluster.workloads.index(victim)] = replace(
        victim, hands_off=unknown
    )
    fleet.cycle()

    assert fleet.when("rc", Action.DEACTIVATE) == []
    assert fleet.writes("rc", "deactivate") == []


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


# docs/RECLAIM.md step 2: a mark counts as a stop begun in the hourly cap.
def test_marks_count_in_the_hourly_cap_and_the_rest_wait_for_the_next_hour(
    log: logging.Logger,
) -> None:
    names = ["rc0", "rc1", "rc2"]
    fleet, _ = a_fleet(
        {n: idle_since(NOW - 3 * WINDOW) for n in names},
        logger=log,
        policy={"maxDeactivationsPerHour": 2},
    )
    fleet.run_until(NOW + LEAD + INTERVAL)
    marked = [n for n in names if fleet.when(n, Action.MARK) == [NOW + LEAD]]
    assert len(marked) == 2
    [waiting] = [n for n in names if n not in marked]
    held = fleet.decision(waiting)
    assert held.action is Action.DEFERRED
    assert "deferred: at most 2 deactivations per hour (0 begun" in held.reason
    fleet.cycle()
    assert "at most 2 deactivations per hour (2 begun" in fleet.decision(waiting).reason

    fleet.run_until(NOW + LEAD + timedelta(hours=1) + 2 * INTERVAL)
    [later] = fleet.when(waiting, Action.MARK)
    assert later > NOW + LEAD + timedelta(hours=1) - INTERVAL
    assert all(fleet.writes(n, "deactivate") == [] for n in names)


# docs/RECLAIM.md: a dry run decides and reports only: it says it would mark, and writes nothing.
def test_a_dry_run_says_it_would_mark_and_writes_nothing(log: logging.Logger) -> None:
    fleet, _ = a_fleet({"rc": idle_since(NOW - 3 * WINDOW)}, logger=log, policy={"dryRun": True})
    fleet.run_until(NOW + 2 * LEAD + 5 * INTERVAL)
    decision = fleet.decision("rc")
    assert decision.action is Action.WOULD_DEACTIVATE
    assert decision.reason.endswith("would mark for Kueue's preemption")
    assert fleet.writes("rc") == []
    assert fleet.when("rc", Action.MARK) == []


# docs/RECLAIM.md step 4: the deactivation after Kueue's preemption of our marked Workload goes
# at once, "not held by the caps: the mark was counted" (an idle Workload held back would
# requeue); the mass-idle breaker tripping in that very cycle holds only the other stops.
def test_the_deactivation_after_kueues_preemption_is_never_held_by_the_caps_or_the_breaker(
    log: logging.Logger,
) -> None:
    busy_before = 10
    readings = {"rc": idle_since(NOW - 3 * WINDOW)} | {f"busy-{i}": busy for i in range(10)}
    fleet, _ = a_fleet(readings, logger=log, policy={"maxDeactivationsPerHour": 1})
    fleet.run_until(NOW + LEAD + INTERVAL)
    assert fleet.when("rc", Action.MARK) == [NOW + LEAD], "the hour's one stop begun"

    for i in range(busy_before):  # everyone else stops working at once: the breaker trips
        fleet.readings[f"busy-{i}"] = idle_since(fleet.clock.now() - 2 * INTERVAL)
    preempt(fleet, "rc", by="waiter")
    at = fleet.clock.now()
    snapshot = fleet.cycle()

    assert snapshot.guards is not None and snapshot.guards.breaker.open
    assert snapshot.guards.deactivations_last_hour == 1, "the hourly cap is spent"
    assert fleet.when("rc", Action.DEACTIVATE) == [at]
    assert len(fleet.writes("rc", "deactivate")) == 1


# docs/RECLAIM.md "What it reports": the mark and the gate, in explain/status and /metrics,
# from the snapshot the cycle published.
def test_the_mark_and_the_gate_are_reported_from_the_snapshot(log: logging.Logger) -> None:
    fleet, _ = a_fleet({"rc": idle_since(NOW - 3 * WINDOW)}, logger=log)
    fleet.run_until(NOW + LEAD + 2 * INTERVAL)
    snapshot = fleet.snapshots[-1]
    [row] = snapshot.workloads
    view = workload_view(
        row, now=snapshot.taken_at, gate=snapshot.kueue_gate, may_read=lambda _: True
    ).via_kueue
    assert view is not None
    assert (view.marked, view.since, view.gate) == (True, NOW + LEAD, "on")
    assert view.reason == f"Marked for Kueue's preemption since {keys.time_text(NOW + LEAD)}"
    assert view.gate_line == gate_served(GATE_ON, "PriorityBoost").line
    registry = fleet.service.telemetry.registry
    marked = "idle_gpu_autoscaler_marked_for_preemption_workloads"
    assert registry.get_sample_value(marked, {"namespace": NS}) == 1
    gate = "idle_gpu_autoscaler_kueue_feature_gate"
    states = {
        s: registry.get_sample_value(gate, {"gate": "PriorityBoost", "state": s})
        for s in ("on", "off", "unknown")
    }
    assert states == {"on": 1, "off": 0, "unknown": 0}

    fleet.readings["rc"] = busy  # the mark is removed: nothing marked any more
    fleet.run_until(fleet.clock.now() + 2 * INTERVAL)
    assert registry.get_sample_value(marked, {"namespace": NS}) is None


def test_without_the_gate_explain_says_the_rule_does_nothing(log: logging.Logger) -> None:
    fleet, _ = a_fleet({"rc": idle_since(NOW - 3 * WINDOW)}, config=GATE_OFF, logger=log)
    fleet.run_until(NOW + LEAD + 2 * INTERVAL)
    snapshot = fleet.snapshots[-1]
    [row] = snapshot.workloads
    view = workload_view(
        row, now=snapshot.taken_at, gate=snapshot.kueue_gate, may_read=lambda _: True
    ).via_kueue
    assert view is not None
    assert (view.marked, view.gate) == (False, "off")
    assert view.reason == (
        "via-kueue does nothing: PriorityBoost is not on in Kueue's Configuration"
    )
    gate = "idle_gpu_autoscaler_kueue_feature_gate"
    registry = fleet.service.telemetry.registry
    assert registry.get_sample_value(gate, {"gate": "PriorityBoost", "state": "off"}) == 1


# docs/RECLAIM.md step 4: after Kueue's preemption the stop is judged as of the eviction. A
# workload busy again, or whose usage became unknown, before Kueue preempted it (and before
# our next cycle could unmark it) loses the mark and is requeued by Kueue, never stopped.
@pytest.mark.parametrize("reading", [busy, nan], ids=["busy-again", "usage-unknown"])
def test_a_preempted_marked_workload_no_longer_idle_at_the_eviction_is_unmarked_not_stopped(
    reading: Any, log: logging.Logger
) -> None:
    fleet, _ = a_fleet({"rc": idle_since(NOW - 3 * WINDOW)}, logger=log)
    fleet.run_until(NOW + LEAD + INTERVAL)
    assert fleet.when("rc", Action.MARK) == [NOW + LEAD]
    fleet.readings["rc"] = reading
    preempt(fleet, "rc", by="waiter")
    at = fleet.clock.now()
    fleet.cycle()

    assert fleet.writes("rc", "deactivate") == []
    assert fleet.when("rc", Action.UNMARK) == [at]
    assert keys.PRIORITY_BOOST not in fleet.annotations("rc")
    assert "Kueue requeues it" in fleet.decision("rc").reason


def test_a_preempted_workload_whose_mark_this_process_never_saw_admitted_is_not_stopped(
    log: logging.Logger,
) -> None:
    """A restart between the mark and the preemption: its usage up to the eviction is not
    known here, and unknown never stops anything."""
    fleet, _ = a_fleet({"rc": idle_since(NOW - 3 * WINDOW)}, logger=log)
    fleet.run_until(NOW + LEAD + INTERVAL)
    preempt(fleet, "rc", by="waiter")
    fleet.service = fleet.started(features=FakeKueueFeatures(GATE_ON))  # over the same cluster
    fleet.cycle()

    assert fleet.writes("rc", "deactivate") == []
    assert "usage up to the eviction is unknown" in fleet.decision("rc").reason


# docs/RECLAIM.md: a dry run writes nothing, even with a mark of ours already there (the mode
# switched after marking) when Kueue preempts it: it says it would deactivate.
def test_a_dry_run_says_it_would_deactivate_a_preempted_marked_workload_and_writes_nothing(
    log: logging.Logger,
) -> None:
    fleet, _ = a_fleet({"rc": idle_since(NOW - 3 * WINDOW)}, logger=log, policy={"dryRun": True})
    [w] = fleet.cluster.workloads
    mark = {keys.PRIORITY_BOOST: str(BOOST), keys.MARKED_AT: keys.time_text(NOW - WINDOW)}
    fleet.cluster.workloads[0] = replace(w, annotations=mark)
    fleet.run_until(NOW + LEAD + INTERVAL)
    preempt(fleet, "rc", by="waiter")
    fleet.cycle()

    decision = fleet.decision("rc")
    assert decision.action is Action.WOULD_DEACTIVATE
    assert "would be deactivated (dry run)" in decision.reason
    assert fleet.writes("rc", "deactivate") == []
    assert keys.PRIORITY_BOOST in fleet.annotations("rc")
