"""`explain` end to end: the real REST server over the test Kubernetes API, and the CLI
against it, say which rule a workload falls under and why each earlier rule did not."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from autoscaler.api.lookup import require_row
from autoscaler.cli import main as console_main
from autoscaler.domain.models import WaitersSeen, WorkloadRef
from autoscaler.domain.policy.owners import KNOWN_OWNERS
from autoscaler.domain.policy.rules import Rule, RuleAction, Selector
from autoscaler.domain.tenant_names import Named, ServedFor
from tests.api.rig import TOKENS, ApiRig
from tests.support.domain_builders import a_policy, with_scoped

BASE = a_policy(dry_run=True)
POLICY = with_scoped(
    BASE,
    Rule(
        "production",
        usage=replace(BASE.default_rule.usage, window=timedelta(hours=4)),
        grace_period=BASE.default_rule.grace_period,
        selector=Selector(namespaces=("prod",)),
    ),
    Rule(
        "team-a-observed",
        usage=BASE.default_rule.usage,
        grace_period=BASE.default_rule.grace_period,
        selector=Selector(namespaces=("team-a",)),
        action=RuleAction.OBSERVE,
    ),
)


@pytest.fixture(scope="module")
def rig() -> ApiRig:
    with ApiRig(policy=POLICY) as running:
        running.add_raycluster("team-a", "alice-rc", peak=0.01)
        running.add_raycluster("team-b", "bob-rc", peak=0.01)
        running.cycle()
        yield running  # type: ignore[misc]


def test_explain_names_the_rule_and_why_earlier_rules_did_not_match(rig: ApiRig) -> None:
    answer = rig.reader.get("/api/v1/workloads/team-a/alice-rc/explain")

    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["rule"], body["matched"]) == ("team-a-observed", True)
    assert body["misses"] == [
        {"rule": "production", "why": "namespace team-a is not one of [prod]"}
    ]
    assert body["workload"]["action"] == "none"
    assert "observed only (rule team-a-observed's action is observe)" in body["workload"]["reason"]


def test_a_workload_no_rule_selects_falls_under_the_default(rig: ApiRig) -> None:
    body = rig.reader.get("/api/v1/workloads/team-b/bob-rc/explain").json()

    assert body["rule"] == "default"
    assert [miss["rule"] for miss in body["misses"]] == ["production", "team-a-observed"]
    assert body["workload"]["action"] == "would-deactivate"


def test_explain_is_authorized_like_the_other_reads(rig: ApiRig) -> None:
    assert rig.http.get("/api/v1/workloads/team-a/alice-rc/explain").status_code == 401
    assert rig.reader.get("/api/v1/workloads/team-a/nosuch/explain").status_code == 404


def test_the_cli_explains_a_workload(rig: ApiRig, capsys: pytest.CaptureFixture[str]) -> None:
    code = console_main(
        ["explain", "alice-rc", "-n", "team-a", "--server", rig.url, "--token", TOKENS["admin"]]
    )
    printed = capsys.readouterr()

    assert code == 0, printed.err
    assert "Rule:             team-a-observed (matched)" in printed.out
    assert "  not production: namespace team-a is not one of [prod]" in printed.out
    assert "Workload:         team-a/" in printed.out


def test_explain_shows_the_cycles_waiter_judgement_naming_the_waiter_only_to_its_readers(
    rig: ApiRig, capsys: pytest.CaptureFixture[str]
) -> None:
    """Changed on purpose (issue 33's rule, docs/SECURITY.md): the judgement named team-b's
    waiter to every reader of team-a. Now the admin (who reads team-b) reads its name; alice,
    who reads team-a only, reads "a Workload in ClusterQueue team-b-cq", in REST and CLI."""
    latest = rig.store.latest()
    assert latest is not None
    alice = require_row(latest, "team-a", "alice-rc").ref  # the Workload, named by its owner
    train = Named(WorkloadRef("team-b", "train"), "team-b-cq")
    seen = WaitersSeen(
        source="workloads",
        outcomes={"served": 1, "fit unknown": 2},
        unknown_why={"order-unknown": 2},
        served={alice: ServedFor(train, "served", "first by fair sharing")},
    )
    rig.store.publish(replace(latest, waiters=seen))
    path = "/api/v1/workloads/team-a/alice-rc/explain"
    try:
        admins = rig.reader.get(path).json()["waiters"]
        alices = rig.http.get(path, headers=rig.as_user("alice")).json()["waiters"]
        bobs = rig.reader.get("/api/v1/workloads/team-b/bob-rc/explain").json()["waiters"]
        codes = [
            console_main(
                ["explain", "alice-rc", "-n", "team-a", "--server", rig.url, "--token", token]
            )
            for token in (TOKENS["admin"], TOKENS["alice"])
        ]
    finally:
        rig.store.publish(latest)

    assert admins == {
        "judged": 3,
        "outcomes": {"served": 1, "fit unknown": 2},
        "fitUnknown": {"order-unknown": 2},
        "failure": None,
        "judgement": "team-b/train (team-b-cq) served: first by fair sharing",
    }
    unnamed = "a Workload in ClusterQueue team-b-cq served: first by fair sharing"
    assert alices == {**admins, "judgement": unnamed}
    assert bobs["judgement"] is None  # another workload's waiter is not shown
    printed = capsys.readouterr()
    assert codes == [0, 0], printed.err
    assert "Waiters judged:   3 (2 fit unknown, 1 served); fit unknown: order-unknown 2" in (
        printed.out
    )
    admin_out, alice_out = printed.out.split("Rule:")[1:]
    assert "Freed for:        team-b/train (team-b-cq) served: first by fair sharing" in (admin_out)
    assert f"Freed for:        {unnamed}" in alice_out
    assert "team-b/train" not in alice_out


def test_the_answer_names_the_owner_as_people_know_it_and_what_a_stop_means(
    rig: ApiRig,
) -> None:
    body = rig.reader.get("/api/v1/workloads/team-b/bob-rc/explain").json()

    row = KNOWN_OWNERS["RayCluster"]
    found = body["workload"]
    assert found["owner"]["display"] == "RayCluster team-b/bob-rc"
    assert (found["stopMeans"], found["bringBack"], found["stopLasts"]) == (
        row.stop_means,
        row.bring_back,
        True,
    )
    assert body["ownerKind"] == {
        "kind": "RayCluster",
        "known": True,
        "enabled": "RayCluster" in POLICY.actionable_kinds,
        "optIn": False,
    }


def test_the_cli_names_the_owner_and_its_kind(
    rig: ApiRig, capsys: pytest.CaptureFixture[str]
) -> None:
    code = console_main(
        ["explain", "bob-rc", "-n", "team-b", "--server", rig.url, "--token", TOKENS["admin"]]
    )
    printed = capsys.readouterr()

    assert code == 0, printed.err
    assert "Owner:            RayCluster team-b/bob-rc" in printed.out
    assert "Owner kind:       RayCluster: on by default, enabled here" in printed.out
    assert f"Stop means:       {KNOWN_OWNERS['RayCluster'].stop_means}" in printed.out
