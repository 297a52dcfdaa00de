"""Rules in the reconcile loop: one fleet read for every rule's view, each workload decided,
acted on and checked fresh under its own rule, and `observe` never acting."""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from autoscaler.domain.models import Action, FleetUsage, Snapshot, UsageView
from autoscaler.domain.policy.decisions import Policy
from autoscaler.domain.policy.rules import Reclaim, Rule, RuleAction, Selector
from tests.support.domain_builders import (
    HOUR,
    NOW,
    a_policy,
    a_workload,
    minutes_ago,
    usage,
    with_scoped,
)
from tests.support.fakes import FakeAuditLog, FakeClock, FakeCluster, FakeMetrics
from tests.support.loop_builders import a_loop, a_screen

BASE = a_policy()


def a_rule(name: str, namespace: str, *, window: timedelta, action: RuleAction) -> Rule:
    return Rule(
        name,
        usage=replace(BASE.default_rule.usage, window=window),
        grace_period=BASE.default_rule.grace_period,
        selector=Selector(namespaces=(namespace,)),
        action=action,
    )


@dataclass
class CountingMetrics(FakeMetrics):
    """Counts the fleet reads: each `read_views` call is one read, whatever its views."""

    view_reads: list[frozenset[UsageView]] = field(default_factory=list)

    def read_views(
        self, views: Collection[UsageView], *, now: datetime
    ) -> dict[UsageView, FleetUsage]:
        self.view_reads.append(frozenset(views))
        return super().read_views(views, now=now)


def run_cycle(policy: Policy) -> tuple[Snapshot, FakeCluster, CountingMetrics]:
    # One more rule, which no workload falls under, still costs no read of its own.
    legacy = a_rule("legacy", "nowhere", window=timedelta(minutes=10), action=RuleAction.OBSERVE)
    policy = with_scoped(policy, *policy.rules[:-1], legacy)
    workloads = [a_workload(ns, "rc").gpu_pod("w-0").build() for ns in ("prod", "dev", "team-a")]
    fleet = usage()
    for ns in ("prod", "dev", "team-a"):
        fleet.gpu(ns, "w-0", peak=0.01, last_busy=minutes_ago(150))  # idle for 2.5 hours
    metrics, cluster = CountingMetrics(fleet.build()), FakeCluster(workloads)
    # The breaker's baseline read after a start is the screen's own, not counted here.
    baseline = FakeMetrics(fleet.build())
    reconciler = a_loop(
        cluster,
        metrics,
        actuator=cluster,
        policy=policy,
        clock=FakeClock(NOW),
        logger=logging.getLogger("test.rules"),
        screen=a_screen(metrics=baseline, policy=policy, audit=FakeAuditLog()),
    )
    return reconciler.run_once(), cluster, metrics


POLICY = with_scoped(
    BASE,
    a_rule("prod", "prod", window=4 * HOUR, action=RuleAction.DEACTIVATE),
    a_rule("dev", "dev", window=timedelta(minutes=30), action=RuleAction.OBSERVE),
)


def test_rules_with_different_windows_cost_one_fleet_read() -> None:
    snapshot, _, metrics = run_cycle(POLICY)

    assert len(metrics.view_reads) == 1
    assert {v.window for v in metrics.view_reads[0]} == {
        4 * HOUR,
        timedelta(minutes=30),
        HOUR,
        timedelta(minutes=10),
    }
    assert set(snapshot.usage) == {"prod", "dev", "default", "legacy"}


def test_each_workload_is_decided_under_its_rule_and_observe_never_acts() -> None:
    snapshot, cluster, _ = run_cycle(POLICY)

    rows = {
        row.ref.namespace: (row.decision.rule.name, row.decision.action)
        for row in snapshot.workloads
    }
    assert rows == {
        "prod": ("prod", Action.NONE),  # 2.5 hours idle is short of its 4-hour window
        "dev": ("dev", Action.NONE),  # past its 30 minutes, but the rule only observes
        "team-a": ("default", Action.DEACTIVATE),
    }
    deactivated = [ref.namespace for call, ref in cluster.calls if call == "deactivate" and ref]
    assert deactivated == ["team-a"]
    [(_, audit)] = cluster.audits
    assert audit.policy.startswith("rule default: threshold 5%, window 1:00:00")


def test_a_when_contended_rule_stops_nothing_while_no_waiter_is_known() -> None:
    contended = replace(
        POLICY.rules[0], usage=BASE.default_rule.usage, reclaim=Reclaim.WHEN_CONTENDED
    )
    snapshot, cluster, _ = run_cycle(with_scoped(POLICY, contended))

    [prod] = [row.decision for row in snapshot.workloads if row.ref.namespace == "prod"]
    assert prod.action is Action.NONE
    assert prod.reason.endswith(
        "left running until contended: who waits is unknown "
        "(rule prod; no reader of pending work is configured)"
    )
    deactivated = [ref.namespace for call, ref in cluster.calls if call == "deactivate" and ref]
    assert "prod" not in deactivated
