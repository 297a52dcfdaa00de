"""The policy over workloads other than Kueue's (ISSUE 17): a suspended or not yet running
RayCluster says so in its own words, and a workload the adapter read as hands-off (KAI's
fractional GPUs, a RayCluster another object controls) is never stopped, however idle."""

from __future__ import annotations

from dataclasses import replace

import pytest

from autoscaler.domain.models import Action, FleetUsage, Pauses, State, WorkloadInfo
from autoscaler.domain.policy.decisions import decide
from autoscaler.domain.policy.management import HandsOff, Manager
from autoscaler.domain.policy.protection import protection
from tests.support.domain_builders import NOW, a_policy, a_workload, minutes_ago, usage

NS = "team-a"
UNSUPPORTED = HandsOff(State.UNSUPPORTED, "KAI fractional GPUs (gpu-fraction 0.5): never stopped")
OWNED = HandsOff(State.PROTECTED, "controlled by RayJob nightly: never suspended on its own")


def idle_fleet() -> FleetUsage:
    policy = a_policy()
    fleet = usage().gpu(NS, "w-0", peak=0.0, last_sample=minutes_ago(0.5)).build()
    return replace(
        fleet,
        window=policy.default_rule.usage.window,
        threshold=policy.default_rule.usage.threshold,
    )


def raycluster(manager: Manager, **changes: object) -> WorkloadInfo:
    built = a_workload(NS, "rc").gpu_pod("w-0").build()
    return replace(built, manager=manager, **changes)  # type: ignore[arg-type]


def judge(workload: WorkloadInfo) -> tuple[State, Action, str]:
    decision = decide(workload, idle_fleet(), policy=a_policy(), pauses=Pauses(), now=NOW)
    return decision.state, decision.action, decision.reason


def test_an_idle_kai_raycluster_is_stopped_like_a_kueue_workload() -> None:
    kueue = judge(raycluster(Manager.KUEUE))
    kai = judge(raycluster(Manager.KAI))
    assert kueue[:2] == kai[:2] == (State.IDLE, Action.DEACTIVATE)


@pytest.mark.parametrize(
    ("manager", "reason"),
    [
        pytest.param(Manager.KUEUE, "spec.active is false", id="kueue-says-spec-active"),
        pytest.param(Manager.KAI, "spec.suspend is true", id="kai-says-spec-suspend"),
        pytest.param(Manager.KUBERAY, "spec.suspend is true", id="kuberay-says-spec-suspend"),
    ],
)
def test_an_inactive_workload_is_reported_in_its_managers_words(
    manager: Manager, reason: str
) -> None:
    # stopped by hand here: no annotation of ours says when or by which rule
    assert judge(raycluster(manager, active=False)) == (
        State.DEACTIVATED,
        Action.NONE,
        f"{reason}: not stopped by this service",
    )


def test_a_raycluster_with_no_pod_running_is_pending_not_waiting_for_kueue() -> None:
    state, action, reason = judge(raycluster(Manager.KAI, admitted=False))
    assert (state, action) == (State.PENDING, Action.NONE)
    assert "Kueue" not in reason and "KAI Scheduler" in reason


@pytest.mark.parametrize(
    "hands_off",
    [
        pytest.param(UNSUPPORTED, id="fractional-gpus-are-unsupported"),
        pytest.param(OWNED, id="another-controllers-raycluster-is-protected"),
    ],
)
def test_a_hands_off_workload_is_never_stopped_however_idle(hands_off: HandsOff) -> None:
    workload = raycluster(Manager.KAI, hands_off=hands_off)
    assert judge(workload) == (hands_off.state, Action.NONE, hands_off.reason)
    # The delete rung asks the same question of an inactive one.
    assert protection(replace(workload, active=False), policy=a_policy()) == (
        hands_off.state,
        hands_off.reason,
    )


def test_a_kai_priority_class_read_by_the_adapter_is_protected_like_kueues() -> None:
    policy = a_policy(protected_classes=("inference",))
    workload = raycluster(Manager.KAI, priority_class="inference")
    decision = decide(workload, idle_fleet(), policy=policy, pauses=Pauses(), now=NOW)
    assert (decision.state, decision.action) == (State.PROTECTED, Action.NONE)
    assert "inference" in decision.reason
