"""Exemption bounds come from the workload's rule: the longest exemption, and whether anyone
who may patch the workload or only an admin may grant it. Through the real REST server."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from autoscaler.domain import annotations as keys
from autoscaler.domain.annotations import time_text
from autoscaler.domain.policy.rules import ExemptionBounds, ExemptionRight, Rule, Selector
from tests.api.rig import ApiRig
from tests.support.domain_builders import a_policy, with_scoped

BASE = a_policy(dry_run=True)
POLICY = with_scoped(
    BASE,
    Rule(
        "short-exemptions",
        usage=BASE.default_rule.usage,
        grace_period=BASE.default_rule.grace_period,
        selector=Selector(namespaces=("team-a",)),
        exemptions=ExemptionBounds(max_duration=timedelta(hours=2)),
    ),
    Rule(
        "admins-only",
        usage=BASE.default_rule.usage,
        grace_period=BASE.default_rule.grace_period,
        selector=Selector(namespaces=("team-b",)),
        exemptions=ExemptionBounds(allowed_to=ExemptionRight.ADMINS),
    ),
)


@pytest.fixture(scope="module")
def rig() -> Iterator[ApiRig]:
    with ApiRig(policy=POLICY) as running:
        running.add_raycluster("team-a", "alice-rc")
        running.add_raycluster("team-b", "bob-rc")
        running.cycle()
        yield running


def exempt(rig: ApiRig, path: str, user: str, duration: str) -> tuple[int, str]:
    answer = rig.http.put(
        path, json={"duration": duration, "reason": "demo"}, headers=rig.as_user(user)
    )
    return answer.status_code, answer.text


def test_the_longest_exemption_is_the_rules(rig: ApiRig) -> None:
    path = "/api/v1/workloads/team-a/alice-rc/exemption"
    status, text = exempt(rig, path, "alice", "3h")

    assert status == 422
    assert "is longer than the maximum exemption of 2h" in text
    assert exempt(rig, path, "alice", "1h")[0] == 200


def test_an_admins_only_rule_refuses_a_workload_editor(rig: ApiRig) -> None:
    status, _ = exempt(rig, "/api/v1/workloads/team-b/bob-rc/exemption", "bob", "1h")

    assert status == 403


def test_a_hand_set_exemption_is_cut_to_its_own_rules_maximum() -> None:
    """team-a's rule allows 2h, the default rule a week: the loop cuts each
    kubectl-set exemption to the bound of the rule its workload falls under."""
    with ApiRig(policy=POLICY) as rig:
        names = {ns: rig.add_raycluster(ns, f"{ns}-rc") for ns in ("team-a", "team-c")}
        requested = time_text(rig.now + timedelta(days=10))
        for namespace, name in names.items():
            workload = rig.workload(namespace, name)
            workload["metadata"]["annotations"] = {keys.EXEMPT_UNTIL: requested}
            rig.kube.store.put(workload)
        rig.cycle()
        cut = {
            ns: rig.workload(ns, name)["metadata"]["annotations"][keys.EXEMPT_UNTIL]
            for ns, name in names.items()
        }
        assert cut == {
            "team-a": time_text(rig.now + timedelta(hours=2)),
            "team-c": time_text(rig.now + POLICY.default_rule.exemptions.max_duration),
        }
