"""Exemption bounds come from the workload's rule: the longest exemption, and whether anyone
who may patch the workload or only an admin may grant it. Through the real REST server."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta

import pytest

from autoscaler.domain.rules import ExemptionBounds, ExemptionRight, Rule, Selector
from tests.api.rig import ApiRig
from tests.support.domain_builders import a_policy

BASE = a_policy(dry_run=True)
POLICY = replace(
    BASE,
    scoped=(
        Rule(
            "short-exemptions",
            usage=BASE.rules,
            grace_period=BASE.grace_period,
            selector=Selector(namespaces=("team-a",)),
            exemptions=ExemptionBounds(max_duration=timedelta(hours=2)),
        ),
        Rule(
            "admins-only",
            usage=BASE.rules,
            grace_period=BASE.grace_period,
            selector=Selector(namespaces=("team-b",)),
            exemptions=ExemptionBounds(allowed_to=ExemptionRight.ADMINS),
        ),
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
