"""The policy in production order, with the shipped defaults: decide → reclaim → stage → screen
→ cap → act, as `serve` runs it. The service is built by the composition root itself
(`build_service`, from `Settings`), over fakes of the ports, and driven by a clock moved one
loop interval per cycle. Every expected answer comes from the documentation cited beside it;
the numbers (warnBefore, the caps, the breaker's thresholds) are read from the shipped settings.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from autoscaler.compose.service import Service
from autoscaler.core.ports import KueueFeatures
from autoscaler.domain import annotations as keys
from autoscaler.domain.models import Action, Decision, FleetUsage, Snapshot, State, WorkloadRef
from autoscaler.domain.outcomes import OutcomeKind
from autoscaler.domain.queues.facts import QueueFacts, Waiter
from autoscaler.engine.acting.snooze import snooze
from autoscaler.settings.rules import default_rule
from autoscaler.settings.tree import Settings
from tests.support.domain_builders import NOW, WorkloadBuilder, a_workload, usage
from tests.support.fakes import FakeClock, FakeCluster, FakeMetrics, FakePendingWork
from tests.support.loop_builders import a_service
from tests.support.quota_builders import GPU, a_waiter, gpu_queue, queues

LOG = logging.getLogger("test.production-order")
SHIPPED = Settings()
POLICY, GUARDS = SHIPPED.policy, SHIPPED.guards
LEAD, INTERVAL, WINDOW = POLICY.warn_before, SHIPPED.loop.interval, POLICY.idle_window
# The shipped policy is a dry run (docs/NOTIFICATIONS.md: "policy.dryRun: true, the default"),
# which writes nothing; every scenario that shows a write turns that one key off.
ACTING: dict[str, Any] = {"policy": {"dryRun": False}}
WRITES = frozenset({"deactivate", "annotate_workload", "annotate_owner", "announce"})
NS, CQ = "team-a", "team-a-cq"
WAITER, TOO_BIG = a_waiter("waiter", CQ, {GPU: 1}), a_waiter("big", CQ, {GPU: 8})

# What Prometheus says about a workload's one GPU at `now` (the fields of `usage().gpu`).
Reading = Callable[[datetime], dict[str, Any]]


def idle_since(at: datetime) -> Reading:
    """Idle from `at` on: busy within the window before then, at or under the threshold after."""
    return lambda now: {
        "peak": 0.9 if now - at < WINDOW else 0.01,
        "last_sample": now,
        "last_busy": at,
    }


def busy(now: datetime) -> dict[str, Any]:
    return {"peak": 0.9, "last_sample": now, "last_busy": now}


def nan(now: datetime) -> dict[str, Any]:
    return {"peak": None, "last_sample": now, "last_busy": None}


def stale(now: datetime) -> dict[str, Any]:
    return {"peak": 0.01, "last_sample": now - POLICY.stale_after - INTERVAL, "last_busy": None}


IDLE_FOR_HOURS = idle_since(NOW - 3 * WINDOW)


class Fleet:
    """One-GPU workloads in `team-a` under the service `settings` build; `cycle` runs the
    loop once at the clock's time, then moves the clock one loop interval."""

    def __init__(
        self,
        readings: dict[str, Reading | None],
        *,
        settings: dict[str, Any] = ACTING,
        pending: FakePendingWork | None = None,
        marked: Callable[[WorkloadBuilder], WorkloadBuilder] = lambda w: w,
        features: KueueFeatures | None = None,
        logger: logging.Logger = LOG,
    ) -> None:
        self.readings = readings  # None: no series at all
        self.settings = Settings.model_validate(settings)
        self.clock = FakeClock(NOW)
        self.cluster = FakeCluster(
            [marked(a_workload(NS, name).gpu_pod(f"{name}-0")).build() for name in readings]
        )
        self.metrics = FakeMetrics(self._usage())
        self.pending, self.logger = pending, logger
        self.service = self.started(features=features)
        self.snapshots: list[Snapshot] = []

    def started(self, *, features: KueueFeatures | None = None) -> Service:
        """The service as `serve` builds it over this fleet: each call a fresh process."""
        return a_service(
            self.settings,
            cluster=self.cluster,
            metrics=self.metrics,
            clock=self.clock,
            pending=self.pending,
            logger=self.logger,
            features=features,
        )

    def _usage(self) -> FleetUsage:
        now, fleet = self.clock.now(), usage()
        for name, reading in self.readings.items():
            if reading is not None:
                fleet.gpu(NS, f"{name}-0", **reading(now))
        return fleet.build(window=WINDOW, evaluated_at=now)

    def cycle(self) -> Snapshot:
        self.metrics.usage = self._usage()
        snapshot = self.service.reconciler.run_once()
        self.snapshots.append(snapshot)
        self.clock.advance(INTERVAL)
        return snapshot

    def run_until(self, end: datetime) -> None:
        """Every cycle before `end`."""
        while self.clock.now() < end:
            self.cycle()

    def decision(self, name: str) -> Decision:
        [row] = [r for r in self.snapshots[-1].workloads if r.ref.name == name]
        return row.decision

    def writes(self, name: str, call: str | None = None) -> list[str]:
        """The requests that changed the workload (or only `call`), in order."""
        mine = (c for c, ref in self.cluster.calls if ref == WorkloadRef(NS, name))
        return [c for c in mine if (c == call if call else c in WRITES)]

    def when(self, name: str, action: Action) -> list[datetime]:
        """The times of the cycles that did `action` to the workload."""
        done = [(s.taken_at, a) for s in self.snapshots for a in s.actions]
        return [
            at
            for at, a in done
            if (a.workload.name, a.action, a.outcome.kind) == (name, action, OutcomeKind.DONE)
        ]

    def annotations(self, name: str) -> dict[str, str]:
        [w] = [w for w in self.cluster.workloads if w.ref.name == name]
        return dict(w.annotations)


# docs/NOTIFICATIONS.md "The warning and its times": warned when the rule would stop it now or
# within warnBefore; the stop at max(stop-planned-at, warned-at + warnBefore), never before.
# docs/RELIABILITY.md "Durable audit before the patch": the record first, then the patch.
@pytest.mark.parametrize(
    "idle_from",
    [
        pytest.param(
            NOW - 3 * WINDOW, id="idle-for-hours-is-warned-now-and-stopped-warnbefore-later"
        ),
        pytest.param(
            NOW - WINDOW + 2 * LEAD,
            id="idle-short-of-its-window-is-warned-warnbefore-ahead-of-the-windows-end",
        ),
    ],
)
def test_an_idle_workload_is_warned_then_stopped_once_when_the_notice_is_served(
    idle_from: datetime,
) -> None:
    fleet = Fleet({"rc": idle_since(idle_from)})
    due = max(NOW, idle_from + WINDOW)
    warned_at = max(NOW, due - LEAD)
    stop_at = max(due, warned_at + LEAD)

    fleet.run_until(stop_at + 5 * INTERVAL)

    assert fleet.when("rc", Action.WARN) == [warned_at]
    assert fleet.when("rc", Action.DEACTIVATE) == [stop_at]
    assert len(fleet.writes("rc", "deactivate")) == 1
    journal = [call for call, ref in fleet.cluster.calls if ref == WorkloadRef(NS, "rc")]
    assert journal.index("audit") < journal.index("deactivate"), "no record, no action"
    [stop] = [r for r in fleet.service.shared.store.read().audit if r.action == "deactivate"]
    # the record written before the patch, settled in place once the patch succeeded
    assert (stop.target, stop.outcome, stop.at) == (f"{NS}/rc", "done", stop_at)
    assert fleet.decision("rc").state is State.DEACTIVATED


# docs/NOTIFICATIONS.md "What clears a warning: only evidence of use ... an all-clear is sent".
def test_a_workload_busy_again_after_its_warning_gets_an_all_clear_and_is_never_stopped() -> None:
    fleet = Fleet({"rc": IDLE_FOR_HOURS})
    fleet.cycle()
    assert fleet.annotations("rc")[keys.STOP_PLANNED_AT] == keys.time_text(NOW + LEAD)

    fleet.readings["rc"] = busy
    fleet.run_until(NOW + 3 * LEAD)

    assert fleet.when("rc", Action.ALL_CLEAR) == [NOW + INTERVAL]
    assert keys.WARNED_AT not in fleet.annotations("rc")
    assert fleet.writes("rc", "deactivate") == []
    assert fleet.decision("rc").state is State.BUSY


# docs/NOTIFICATIONS.md "Snoozing": a snooze consumes the warning it answers; nothing stops
# before its end; still idle warnBefore before the end, the workload is warned again.
def test_a_snooze_holds_the_stop_until_its_end_with_a_fresh_warning_ahead_of_it() -> None:
    fleet = Fleet({"rc": IDLE_FOR_HOURS})
    fleet.run_until(NOW + LEAD / 3)
    until = fleet.clock.now() + 4 * LEAD
    [workload] = fleet.cluster.workloads  # as `idle-gpu-autoscaler snooze` grants it
    snooze(
        fleet.cluster,
        workload,
        until=until,
        by="alice",
        reason="presenting",
        rule=default_rule(fleet.settings),
        now=fleet.clock.now(),
        logger=LOG,
    )

    fleet.run_until(until + 3 * INTERVAL)

    assert fleet.when("rc", Action.WARN) == [NOW, until - LEAD]
    assert fleet.when("rc", Action.DEACTIVATE) == [until]
    held = [s for s in fleet.snapshots if NOW + LEAD <= s.taken_at < until - LEAD]
    assert held and all(s.workloads[0].decision.state is State.SNOOZED for s in held)


# README "Exempting a workload by hand"; docs/RULES.md: exempt comes before usage; with
# api.allowIndefiniteExemption (shipped true) a bare `exempt: "true"` has no end.
@pytest.mark.parametrize(
    "exempt",
    [
        pytest.param(lambda w: w.exempt(on_owner=True), id="exempt-true-on-the-raycluster"),
        pytest.param(lambda w: w.exempt_until(NOW + 2 * WINDOW), id="exempt-until-on-the-workload"),
    ],
)
def test_an_exempt_workload_is_left_alone_neither_warned_nor_stopped(
    exempt: Callable[[WorkloadBuilder], WorkloadBuilder],
) -> None:
    fleet = Fleet({"rc": IDLE_FOR_HOURS}, marked=exempt)
    fleet.run_until(NOW + 2 * LEAD)

    assert fleet.writes("rc") == []
    assert fleet.decision("rc").state is State.EXEMPT


# docs/RULES.md "Knobs": `when-contended` stops "only when a pending Workload it would let in
# waits"; docs/SAVINGS.md "What the loop records": the waiter is named (`deactivated-for`).
# The shipped default rule reclaims `always`, so the rule is added in the settings.
@pytest.mark.parametrize(
    ("waiting", "stopped"),
    [
        pytest.param((WAITER,), True, id="a-waiter-it-lets-in-is-named-and-the-stop-goes-ahead"),
        pytest.param((), False, id="with-nobody-waiting-nothing-is-warned-or-stopped"),
        pytest.param((TOO_BIG,), False, id="a-waiter-too-big-for-the-queue-stops-nothing"),
    ],
)
def test_a_when_contended_rule_stops_only_for_a_waiter_it_lets_in(
    waiting: tuple[Waiter, ...], stopped: bool
) -> None:
    contended = {"name": "shared", "match": {"namespaces": [NS]}, "reclaim": "when-contended"}
    full = queues(gpu_queue(CQ, gpus=1, used=1))
    fleet = Fleet(
        {"rc": IDLE_FOR_HOURS},
        settings={**ACTING, "rules": [contended]},
        pending=FakePendingWork(QueueFacts(queues=full, waiters=waiting)),
        marked=lambda w: w.charging(CQ, {("a100", GPU): 1}),
    )
    fleet.run_until(NOW + LEAD + 3 * INTERVAL)

    assert fleet.when("rc", Action.DEACTIVATE) == ([NOW + LEAD] if stopped else [])
    assert fleet.when("rc", Action.WARN) == ([NOW] if stopped else [])
    if stopped:
        assert f"{NS}/waiter" in fleet.snapshots[0].workloads[0].decision.reason  # the warning
        assert fleet.annotations("rc")[keys.DEACTIVATED_FOR] == f"{NS}/waiter"
    else:
        assert fleet.writes("rc") == []
        assert "nobody waits" in fleet.decision("rc").reason


# docs/RELIABILITY.md "Mass-idle circuit breaker": when MORE than max(minWorkloads, sharePercent
# %) of last cycle's busy workloads turn idle in one cycle, every deactivation waits until
# closeAfterCycles consecutive normal cycles; as many as the limit is an ordinary cycle.
@pytest.mark.parametrize(
    ("beyond_limit", "trips"),
    [
        pytest.param(0, False, id="as-many-as-the-limit-turning-idle-is-ordinary"),
        pytest.param(1, True, id="one-more-trips-it-and-the-stop-waits-for-normal-cycles"),
    ],
)
def test_the_mass_idle_breaker_holds_a_due_stop_when_many_busy_turn_idle_at_once(
    beyond_limit: int, trips: bool
) -> None:
    breaker, busy_before = GUARDS.breaker, 10
    limit = max(breaker.min_workloads, breaker.share_percent / 100 * busy_before)
    fleet = Fleet({"idle": IDLE_FOR_HOURS} | {f"busy-{i}": busy for i in range(busy_before)})
    fleet.run_until(NOW + LEAD)  # warned at NOW: its stop is due in the next cycle
    for i in range(math.floor(limit) + beyond_limit):  # stopped working, all at once
        fleet.readings[f"busy-{i}"] = idle_since(NOW + LEAD - 2 * INTERVAL)
    fleet.run_until(NOW + LEAD + (breaker.close_after_cycles + 2) * INTERVAL)

    [due] = [s for s in fleet.snapshots if s.taken_at == NOW + LEAD]
    assert due.guards is not None and due.guards.breaker.open is trips
    held = due.workloads[0].decision
    assert (held.action is Action.DEFERRED) is trips
    assert ("mass-idle circuit breaker open" in held.reason) is trips
    waited = breaker.close_after_cycles if trips else 0
    assert fleet.when("idle", Action.DEACTIVATE) == [NOW + LEAD + waited * INTERVAL]
    assert all(fleet.writes(f"busy-{i}") == [] for i in range(busy_before))  # not idle long


# docs/RELIABILITY.md "Blast radius": at most maxDeactivationsPerCycle per cycle, the longest
# idle first; the rest wait ("deferred") and say so.
def test_the_per_cycle_cap_stops_the_longest_idle_first_and_the_rest_next_cycle() -> None:
    cap = POLICY.max_deactivations_per_cycle
    idle = {f"rc-{i}": idle_since(NOW - 2 * WINDOW - i * INTERVAL) for i in range(cap + 2)}
    fleet = Fleet(dict(idle))
    fleet.run_until(NOW + LEAD + 2 * INTERVAL)

    longest = [f"rc-{i}" for i in range(2, cap + 2)]
    assert all(fleet.when(name, Action.DEACTIVATE) == [NOW + LEAD] for name in longest)
    assert all(fleet.when(f"rc-{i}", Action.DEACTIVATE) == [NOW + LEAD + INTERVAL] for i in (0, 1))
    first = {r.ref.name: r.decision for r in fleet.snapshots[-2].workloads}
    assert first["rc-0"].action is Action.DEFERRED
    assert f"cap of {cap} deactivations per cycle" in first["rc-0"].reason


# docs/RELIABILITY.md "Unknown never deactivates": a missing series, NaN or a stale sample is
# unknown; docs/NOTIFICATIONS.md: "Unknown holds it: no data neither stops nor clears".
@pytest.mark.parametrize(
    ("unknown", "why"),
    [
        pytest.param(None, "series", id="a-gpu-whose-series-vanished-is-never-stopped"),
        pytest.param(nan, "NaN", id="a-gpu-reading-nan-is-never-stopped"),
        pytest.param(stale, "stale", id="a-gpu-whose-newest-sample-is-stale-is-never-stopped"),
    ],
)
def test_unknown_usage_neither_stops_nor_clears_a_warning(
    unknown: Reading | None, why: str
) -> None:
    fleet = Fleet({"rc": IDLE_FOR_HOURS})
    fleet.cycle()
    fleet.readings["rc"] = unknown
    fleet.run_until(NOW + 3 * LEAD)

    assert fleet.writes("rc", "deactivate") == []
    assert fleet.when("rc", Action.ALL_CLEAR) == []
    assert keys.WARNED_AT in fleet.annotations("rc")
    assert fleet.decision("rc").state is State.UNKNOWN
    assert why in fleet.decision("rc").reason


# docs/NOTIFICATIONS.md: "In dry run (policy.dryRun: true, the default) the service writes
# nothing, so it gives no warning either: a decision says that a warning would be given";
# docs/API.md "Decisions and audit": its own trail keeps each "would deactivate" decision
# once per idle episode.
def test_the_shipped_dry_run_reports_would_deactivate_and_writes_nothing_on_the_workload() -> None:
    assert POLICY.dry_run, "the shipped settings are a dry run"
    fleet = Fleet({"rc": IDLE_FOR_HOURS}, settings={})
    fleet.run_until(NOW + 3 * LEAD)

    decision = fleet.decision("rc")
    assert decision.action is Action.WOULD_DEACTIVATE
    assert "would warn" in decision.reason
    assert fleet.writes("rc") == []
    [record] = fleet.service.shared.store.read().audit
    assert (record.action, record.target) == ("would-deactivate", f"{NS}/rc")
    assert "not patched" in record.outcome


def test_each_scenario_starts_from_the_shipped_settings_but_dry_run() -> None:
    """Only `policy.dryRun` differs from what ships (the when-contended scenario adds a rule)."""
    acting = Settings.model_validate(ACTING)
    assert acting.policy.model_copy(update={"dry_run": True}) == POLICY
    assert acting.model_dump(exclude={"policy"}) == SHIPPED.model_dump(exclude={"policy"})
