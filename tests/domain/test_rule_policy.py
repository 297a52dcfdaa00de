"""The policy under rules: each workload is judged with its own rule's window, threshold,
grace and action, and every decision names that rule.

Two rules before the default: `prod` (namespace `prod`, a 4-hour window, observe only unless a
row says otherwise) and `dev` (namespace `dev`, a 30-minute window, 10 %). Each workload is a
RayCluster with one GPU, admitted a day ago, idle (1 %) since well before the longest window.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from autoscaler.domain.models import Action, FleetUsage, Pauses, State
from autoscaler.domain.policy.decisions import Policy, decide
from autoscaler.domain.policy.rules import Reclaim, Rule, RuleAction, Selector
from tests.support.decision_builders import decide_fleet
from tests.support.domain_builders import (
    HOUR,
    NOW,
    a_policy,
    a_workload,
    minutes_ago,
    rule_named,
    usage,
    with_scoped,
)

BASE = a_policy()
PROD = Rule(
    "prod",
    usage=replace(BASE.default_rule.usage, window=4 * HOUR),
    grace_period=timedelta(hours=1),
    selector=Selector(namespaces=("prod",)),
    reclaim=Reclaim.WHEN_CONTENDED,
    action=RuleAction.OBSERVE,
)
DEV = Rule(
    "dev",
    usage=replace(BASE.default_rule.usage, window=timedelta(minutes=30), threshold=0.10),
    grace_period=timedelta(minutes=5),
    selector=Selector(namespaces=("dev",)),
)
POLICY = with_scoped(BASE, PROD, DEV)


def fleet_for(
    policy: Policy, *, peak: float = 0.01, idle_minutes: float = 300
) -> dict[str, FleetUsage]:
    """Every rule's view of one GPU per namespace, idle for `idle_minutes`."""
    built = usage()
    for namespace in ("prod", "dev", "team-a"):
        built.gpu(namespace, "w-0", peak=peak, last_busy=minutes_ago(idle_minutes))
    base = built.build()
    return {
        rule.name: replace(base, window=rule.usage.window, threshold=rule.usage.threshold)
        for rule in policy.rules
    }


def decided(
    namespace: str,
    *,
    policy: Policy = POLICY,
    idle_minutes: float = 300,
    peak: float = 0.01,
    admitted_minutes: float = 24 * 60,
) -> tuple[str, State, Action, str]:
    workload = (
        a_workload(namespace, "rc")
        .gpu_pod("w-0")
        .admitted(at=minutes_ago(admitted_minutes))
        .build()
    )
    fleet = fleet_for(policy, peak=peak, idle_minutes=idle_minutes)
    d = decide(workload, fleet, policy=policy, pauses=Pauses(), now=NOW)
    return d.rule.name, d.state, d.action, d.reason


ROWS = [
    pytest.param(
        "dev",
        {},
        ("dev", State.IDLE, Action.DEACTIVATE),
        id="dev-idle-past-its-short-window-is-deactivated",
    ),
    pytest.param(
        "dev",
        {"idle_minutes": 45},
        ("dev", State.IDLE, Action.DEACTIVATE),
        id="dev-45-minutes-idle-is-past-30",
    ),
    pytest.param(
        "team-a",
        {"idle_minutes": 45},
        ("default", State.IDLE, Action.NONE),
        id="default-45-minutes-idle-is-short-of-an-hour",
    ),
    pytest.param(
        "dev",
        {"peak": 0.08},
        ("dev", State.IDLE, Action.DEACTIVATE),
        id="dev-8-percent-is-idle-under-its-10-percent",
    ),
    pytest.param(
        "team-a",
        {"peak": 0.08},
        ("default", State.BUSY, Action.NONE),
        id="default-8-percent-is-busy-under-5-percent",
    ),
    pytest.param("prod", {}, ("prod", State.IDLE, Action.NONE), id="prod-observes-only"),
    pytest.param(
        "dev",
        {"admitted_minutes": 10},
        ("dev", State.IDLE, Action.NONE),
        id="dev-grace-of-5-minutes-is-over-after-10",
    ),
    pytest.param(
        "team-a",
        {"admitted_minutes": 10},
        ("default", State.GRACE, Action.NONE),
        id="default-grace-is-the-policy",
    ),
]


@pytest.mark.parametrize(("namespace", "changes", "expected"), ROWS)
def test_each_workload_is_judged_by_its_own_rule(
    namespace: str, changes: dict[str, float], expected: tuple[str, State, Action]
) -> None:
    rule, state, action, _ = decided(namespace, **changes)

    assert (rule, state, action) == expected


def test_an_observed_workload_says_it_is_only_observed() -> None:
    _, _, _, reason = decided("prod")

    assert "observed only (rule prod's action is observe): no action" in reason


def test_an_unknown_rule_decides_unknown_and_never_acts() -> None:
    h100 = Rule(
        "h100",
        usage=DEV.usage,
        grace_period=DEV.grace_period,
        selector=Selector(gpu_models=("H100",)),
    )
    policy = with_scoped(BASE, h100)

    rule, state, action, reason = decided("team-a", policy=policy)  # no modelName this cycle

    assert (rule, state, action) == ("h100", State.UNKNOWN, Action.NONE)
    assert (
        reason
        == "rule h100 cannot be evaluated: no GPU model known this cycle (gpuModels); no action"
    )


def test_a_keda_managed_workload_still_says_its_rule_cannot_be_evaluated() -> None:
    h100 = Rule("h100", DEV.usage, DEV.grace_period, selector=Selector(gpu_models=("H100",)))
    policy = with_scoped(BASE, h100)
    workload = a_workload("team-a", "rc").gpu_pod("w-0").keda().build()

    d = decide(workload, fleet_for(policy), policy=policy, pauses=Pauses(), now=NOW)

    # KEDA-managed wins the state; KEDA's own answers read why the rule is unknown
    assert (d.state, d.rule.name) == (State.KEDA_MANAGED, "h100")
    assert d.rule_unknown == "no GPU model known this cycle (gpuModels)"


def test_a_rule_without_its_view_read_is_unknown_never_idle() -> None:
    workload = a_workload("dev", "rc").gpu_pod("w-0").build()
    only_default = {"default": fleet_for(POLICY)["default"]}

    d = decide(workload, only_default, policy=POLICY, pauses=Pauses(), now=NOW)

    assert (d.rule.name, d.state, d.action) == ("dev", State.UNKNOWN, Action.NONE)
    assert "no usage was read for rule dev" in d.reason


def test_decisions_without_rules_name_the_default_rule() -> None:
    workloads = [a_workload("team-a", "rc").gpu_pod("w-0").build()]
    fleet = fleet_for(BASE)["default"]

    [d] = decide_fleet(workloads, fleet, policy=BASE, pauses=Pauses(), now=NOW)

    assert (d.rule.name, d.action) == ("default", Action.DEACTIVATE)


def test_the_rule_named_exposes_its_reclaim_mode() -> None:
    assert rule_named(POLICY, "prod") == PROD
    assert rule_named(POLICY, "prod").reclaim is Reclaim.WHEN_CONTENDED  # type: ignore[union-attr]
    assert POLICY.default_rule.reclaim is Reclaim.ALWAYS
    assert rule_named(POLICY, "nosuch") is None
