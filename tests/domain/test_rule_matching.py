"""Rule matching as decision tables: each selector, first match wins, the default closes the
list, and a selector that cannot be evaluated stops the search (never a fall-through).

Unless a row says otherwise the workload is a RayCluster `rc` in `team-a`, from LocalQueue
`user-queue`, admitted by ClusterQueue `gpu-cq` in cohort `research`, priority class `low`,
its namespace labelled `env=dev`, its owner `team=vision`, on one `A100` GPU.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.policy.checks import covers, impossible, shadowed
from autoscaler.domain.policy.rules import Rule, RuleMatch, Selector, match_rule
from autoscaler.domain.usage.idleness import UsageRules
from tests.support.domain_builders import HOUR, THRESHOLD, a_workload

USAGE = UsageRules(
    threshold=THRESHOLD,
    window=HOUR,
    slot=timedelta(minutes=1),
    min_coverage=0.8,
    stale_after=timedelta(minutes=3),
)
DEFAULT = Rule("default", usage=USAGE, grace_period=timedelta(minutes=15))
A100 = frozenset({"A100"})


def a_rule(name: str, **selects: Any) -> Rule:
    return replace(DEFAULT, name=name, selector=Selector(**selects))


def workload(**changes: Any) -> WorkloadInfo:
    built = a_workload("team-a", "rc").gpu_pod("w-0").build()
    facts: dict[str, Any] = {
        "cluster_queue": "gpu-cq",
        "cohort": "research",
        "priority_class": "low",
        "namespace_labels": {"env": "dev"},
        "owner_labels": {"team": "vision"},
    }
    return replace(built, **{**facts, **changes})


def matched(rule: Rule, wl: WorkloadInfo | None = None, *, models: frozenset[str] = A100) -> str:
    """The name of the rule `wl` falls under with `rule` first and the default last, or why
    it is unknown; with the first rule's miss reason when it did not match."""
    found = match_rule(wl or workload(), (rule, DEFAULT), gpu_models=models)
    if not found.known:
        return f"unknown under {found.rule.name}: {found.unknown}"
    return found.rule.name + "".join(f" ({miss.why})" for miss in found.misses)


SELECTOR_ROWS = [
    pytest.param(a_rule("r", namespaces=("team-a", "x")), None, "r", id="namespace-listed"),
    pytest.param(
        a_rule("r", namespaces=("x", "y")),
        None,
        "default (namespace team-a is not one of [x, y])",
        id="namespace-not-listed-falls-to-default",
    ),
    pytest.param(a_rule("r", namespace_labels={"env": "dev"}), None, "r", id="namespace-label"),
    pytest.param(
        a_rule("r", namespace_labels={"env": "prod"}),
        None,
        "default (namespace team-a has env=dev, not env=prod)",
        id="namespace-label-other-value",
    ),
    pytest.param(
        a_rule("r", namespace_labels={"tier": "gold"}),
        None,
        "default (namespace team-a has no label tier=gold)",
        id="namespace-label-missing",
    ),
    pytest.param(a_rule("r", local_queues=("user-queue",)), None, "r", id="local-queue"),
    pytest.param(
        a_rule("r", local_queues=("other",)),
        None,
        "default (local queue user-queue is not one of [other])",
        id="local-queue-not-listed",
    ),
    pytest.param(a_rule("r", cluster_queues=("gpu-cq",)), None, "r", id="cluster-queue"),
    pytest.param(
        a_rule("r", cluster_queues=("gpu-cq",)),
        workload(cluster_queue=None, admitted=False),
        "default (no ClusterQueue (none known), needs one of [gpu-cq])",
        id="cluster-queue-of-unadmitted-workload",
    ),
    pytest.param(a_rule("r", cohorts=("research",)), None, "r", id="cohort"),
    pytest.param(
        a_rule("r", cohorts=("research",)),
        workload(cohort=None),
        "default (no cohort (ClusterQueue gpu-cq has none), needs one of [research])",
        id="cluster-queue-without-cohort",
    ),
    pytest.param(a_rule("r", priority_classes=("low",)), None, "r", id="priority-class"),
    pytest.param(
        a_rule("r", priority_classes=("high",)),
        None,
        "default (priority class low is not one of [high])",
        id="priority-class-not-listed",
    ),
    pytest.param(a_rule("r", gpu_models=("A100", "H100")), None, "r", id="gpu-model"),
    pytest.param(
        a_rule("r", gpu_models=("H100",)),
        None,
        "default (GPU model A100 is not one of [H100])",
        id="gpu-model-not-listed",
    ),
    pytest.param(a_rule("r", owner_kinds=("RayCluster",)), None, "r", id="owner-kind"),
    pytest.param(
        a_rule("r", owner_kinds=("RayJob",)),
        None,
        "default (owner kind RayCluster is not one of [RayJob])",
        id="owner-kind-not-listed",
    ),
    pytest.param(a_rule("r", owner_labels={"team": "vision"}), None, "r", id="owner-label"),
    pytest.param(
        a_rule("r", owner_labels={"team": "nlp"}),
        None,
        "default (owner has team=vision, not team=nlp)",
        id="owner-label-other-value",
    ),
    pytest.param(
        a_rule("r", namespaces=("team-a",), priority_classes=("high",)),
        None,
        "default (priority class low is not one of [high])",
        id="every-criterion-must-hold",
    ),
]


@pytest.mark.parametrize(("rule", "wl", "expected"), SELECTOR_ROWS)
def test_each_selector_matches_or_says_why_not(
    rule: Rule, wl: WorkloadInfo | None, expected: str
) -> None:
    assert matched(rule, wl) == expected


UNKNOWN_ROWS = [
    pytest.param(
        a_rule("prod", namespace_labels={"env": "prod"}),
        workload(namespace_labels=None),
        A100,
        "unknown under prod: namespace team-a's labels could not be read (namespaceLabels)",
        id="unreadable-namespace-labels",
    ),
    pytest.param(
        a_rule("h100", gpu_models=("H100",)),
        workload(),
        frozenset(),
        "unknown under h100: no GPU model known this cycle (gpuModels)",
        id="no-gpu-model-this-cycle",
    ),
    pytest.param(
        a_rule("prod", namespaces=("prod",), namespace_labels={"env": "prod"}),
        workload(namespace_labels=None),
        A100,
        "default (namespace team-a is not one of [prod])",
        id="a-definite-miss-wins-over-an-unknown-criterion",
    ),
]


@pytest.mark.parametrize(("rule", "wl", "models", "expected"), UNKNOWN_ROWS)
def test_a_selector_that_cannot_be_evaluated_never_falls_through(
    rule: Rule, wl: WorkloadInfo, models: frozenset[str], expected: str
) -> None:
    assert matched(rule, wl, models=models) == expected


def test_first_match_wins_and_every_earlier_miss_is_explained() -> None:
    rules = (
        a_rule("prod", namespaces=("prod",)),
        a_rule("dev-low", priority_classes=("low",)),
        a_rule("dev", namespaces=("team-a",)),
        DEFAULT,
    )

    found = match_rule(workload(), rules, gpu_models=A100)

    assert found == RuleMatch(rules[1], misses=found.misses)
    assert [str(miss) for miss in found.misses] == [
        "rule prod: namespace team-a is not one of [prod]"
    ]


def test_the_default_rule_closes_the_list() -> None:
    found = match_rule(workload(), (a_rule("prod", namespaces=("prod",)), DEFAULT), gpu_models=A100)

    assert found.rule is DEFAULT
    assert found.known


def test_an_unknown_rule_stops_the_search_before_later_rules() -> None:
    rules = (a_rule("h100", gpu_models=("H100",)), a_rule("all-of-team-a", namespaces=("team-a",)))

    found = match_rule(workload(), (*rules, DEFAULT), gpu_models=frozenset())

    assert found.rule.name == "h100"
    assert not found.known


SHADOW_ROWS = [
    pytest.param(
        (
            a_rule("team-a", namespaces=("team-a",)),
            a_rule("team-a-low", namespaces=("team-a",), priority_classes=("low",)),
        ),
        [
            "rule team-a-low can never match: rule team-a comes first and selects everything it "
            "selects (namespaces: [team-a])"
        ],
        id="narrower-rule-after-wider-one",
    ),
    pytest.param(
        (a_rule("a", namespaces=("a", "b")), a_rule("b", namespaces=("b",))),
        [
            "rule b can never match: rule a comes first and selects everything it selects "
            "(namespaces: [a, b])"
        ],
        id="subset-of-namespaces",
    ),
    pytest.param(
        (
            a_rule("env", namespace_labels={"env": "prod"}),
            a_rule("gold", namespace_labels={"env": "prod", "tier": "gold"}),
        ),
        [
            "rule gold can never match: rule env comes first and selects everything it selects "
            "(namespaceLabels: [env=prod])"
        ],
        id="fewer-labels-select-more",
    ),
    pytest.param(
        (a_rule("low", priority_classes=("low",)), a_rule("team-a", namespaces=("team-a",))),
        [],
        id="overlapping-but-neither-covers-the-other",
    ),
    pytest.param(
        (a_rule("b", namespaces=("b",)), a_rule("a", namespaces=("a", "b"))),
        [],
        id="wider-rule-after-narrower-one-still-matches-the-rest",
    ),
    pytest.param(
        (a_rule("everything"),),
        [
            "rule default can never match: rule everything comes first and selects everything "
            "it selects (every workload)"
        ],
        id="a-rule-without-match-hides-the-default",
    ),
]


@pytest.mark.parametrize(("rules", "expected"), SHADOW_ROWS)
def test_rules_that_can_never_match_are_explained(
    rules: tuple[Rule, ...], expected: list[str]
) -> None:
    assert list(shadowed((*rules, DEFAULT))) == expected


def test_the_default_rule_covers_every_selector() -> None:
    assert covers(Selector(), Selector(namespaces=("x",), owner_labels={"a": "b"}))
    assert not covers(Selector(namespaces=("x",)), Selector())


IMPOSSIBLE_ROWS = [
    pytest.param(Selector(namespaces=()), ["match.namespaces"], id="empty-namespace-list"),
    pytest.param(Selector(gpu_models=()), ["match.gpuModels"], id="empty-model-list"),
    pytest.param(Selector(owner_kinds=("RayJob",)), ["match.ownerKinds"], id="kind-not-enabled"),
    pytest.param(Selector(owner_kinds=("Pod",)), ["match.ownerKinds"], id="kind-not-known"),
    pytest.param(Selector(owner_kinds=("RayJob", "RayCluster")), [], id="one-kind-enabled"),
    pytest.param(Selector(namespaces=("a",)), [], id="a-possible-selector"),
]


@pytest.mark.parametrize(("selector", "keys"), IMPOSSIBLE_ROWS)
def test_selectors_that_can_never_match_are_found_by_key(
    selector: Selector, keys: list[str]
) -> None:
    found = impossible(selector, enabled_kinds={"RayCluster"})

    assert [f.key for f in found] == keys
