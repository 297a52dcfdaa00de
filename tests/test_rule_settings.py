"""The `rules:` section: what a file says becomes the domain's rules, unset knobs inherit the
default rule (`policy:`), and every mistake names its key."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from autoscaler.core.errors import ConfigError
from autoscaler.domain.policy.rules import ExemptionRight, Reclaim, RuleAction, Selector
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings, load_settings
from tests.support.check_config import check_config

RULES = """
policy:
  idleWindow: 1h
  thresholdPercent: 5
rules:
  - name: production
    match:
      namespaceLabels: {env: prod}
      clusterQueues: [prod-cq]
    idleWindow: 4h
    reclaim: when-contended
    exemptions: {maxDuration: 30d, allowedTo: admins}
  - name: dev
    match: {namespaces: [dev, sandbox]}
    thresholdPercent: 10
    action: observe
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, text))
    return str(caught.value)


def test_rules_become_domain_rules_with_the_default_last(tmp_path: Path) -> None:
    policy = build_policy(load_settings(write(tmp_path, RULES)))

    production, dev, default = policy.rules
    assert [r.name for r in policy.rules] == ["production", "dev", "default"]
    assert production.selector == Selector(
        namespace_labels={"env": "prod"}, cluster_queues=("prod-cq",)
    )
    assert (production.usage.window, production.usage.threshold) == (timedelta(hours=4), 0.05)
    assert production.reclaim is Reclaim.WHEN_CONTENDED
    assert production.exemptions.max_duration == timedelta(days=30)
    assert production.exemptions.allowed_to is ExemptionRight.ADMINS
    assert (dev.usage.window, dev.usage.threshold) == (timedelta(hours=1), 0.10)
    assert dev.action is RuleAction.OBSERVE
    assert dev.exemptions.allowed_to is ExemptionRight.WORKLOAD_EDITORS
    assert (default.reclaim, default.action) == (Reclaim.ALWAYS, RuleAction.DEACTIVATE)


def test_not_running_after_is_the_policys_unless_a_rule_sets_its_own(tmp_path: Path) -> None:
    text = (
        "policy: {notRunningAfter: 45m}\n"
        "rules:\n"
        "  - name: batch\n"
        "    match: {namespaces: [batch]}\n"
        "    notRunningAfter: 2h\n"
        "  - name: dev\n"
        "    match: {namespaces: [dev]}\n"
    )
    batch, dev, default = build_policy(load_settings(write(tmp_path, text))).rules

    assert batch.usage.not_running_after == timedelta(hours=2)
    assert dev.usage.not_running_after == default.usage.not_running_after == timedelta(minutes=45)
    assert build_policy(Settings()).default_rule.usage.not_running_after == timedelta(minutes=30)


def test_without_rules_the_default_rule_is_todays_policy() -> None:
    settings = Settings()
    policy = build_policy(settings)

    assert policy.rules == (policy.default_rule,)
    assert policy.default_rule.usage.window == settings.policy.idle_window
    assert policy.default_rule.grace_period == settings.policy.grace_period
    assert policy.default_rule.exemptions.max_duration == timedelta(days=7)
    assert (policy.default_rule.reclaim, policy.default_rule.action) == (
        Reclaim.ALWAYS,
        RuleAction.DEACTIVATE,
    )


def test_a_written_default_rule_sets_what_policy_does_not(tmp_path: Path) -> None:
    text = "rules:\n  - name: default\n    idleWindow: 2h\n    action: observe\n"
    policy = build_policy(load_settings(write(tmp_path, text)))

    assert policy.rules[:-1] == ()  # nothing before the default rule
    assert policy.default_rule.usage.window == timedelta(hours=2)
    assert policy.default_rule.action is RuleAction.OBSERVE


BAD = [
    pytest.param(
        "rules:\n  - name: a\n    match: {namespace: [x]}\n",
        'rules[0].match.namespace: unknown key; did you mean "namespaces"?',
        id="unknown-match-key",
    ),
    pytest.param(
        "rules:\n  - name: a\n    idleWindw: 1h\n",
        'rules[0].idleWindw: unknown key; did you mean "idleWindow"?',
        id="typo",
    ),
    pytest.param(
        "rules:\n  - name: a\n    reclaim: sometimes\n", "rules[0].reclaim", id="bad-reclaim"
    ),
    pytest.param("rules:\n  - name: A b\n", "rules[0].name", id="bad-name"),
    pytest.param(
        "rules:\n  - name: a\n    match: {namespaces: []}\n",
        "rules[0].match.namespaces: an empty list matches nothing",
        id="empty-list",
    ),
    pytest.param(
        "rules:\n  - name: a\n    match: {ownerKinds: [RayJob]}\n",
        "rules[0].match.ownerKinds: RayJob not enabled in cluster.ownerKinds",
        id="owner-kind-not-enabled",
    ),
    pytest.param(
        "rules:\n  - name: a\n    match: {namespaces: [x]}\n  - name: a\n"
        "    match: {namespaces: [y]}\n",
        "rules[1].name: a is used by an earlier rule",
        id="duplicate-name",
    ),
    pytest.param(
        "rules:\n  - name: default\n  - name: a\n    match: {namespaces: [x]}\n",
        "rules[0].name: the default rule closes the list: write it last",
        id="default-not-last",
    ),
    pytest.param(
        "rules:\n  - name: default\n    match: {namespaces: [x]}\n",
        "rules[0].match: the default rule matches everything",
        id="default-with-match",
    ),
    pytest.param(
        "policy: {notRunningAfter: 1h}\nrules:\n  - name: default\n    notRunningAfter: 2h\n",
        "rules[0].notRunningAfter and policy.notRunningAfter both set the default rule's "
        "notRunningAfter",
        id="not-running-after-twice",
    ),
    pytest.param(
        "policy: {idleWindow: 2h}\nrules:\n  - name: default\n    idleWindow: 3h\n",
        "rules[0].idleWindow and policy.idleWindow both set the default rule's idleWindow",
        id="policy-and-default-rule-both-set-the-window",
    ),
    pytest.param(
        "api: {maxExemption: 3d}\nrules:\n  - name: default\n    exemptions: {maxDuration: 1d}\n",
        "api.maxExemption: removed at 1.0; write exemptions.maxDuration in a rule named default",
        id="api-and-default-rule-both-set-the-longest-exemption",
    ),
    pytest.param(
        "keda: {profiles: {fast: {idleWindow: 10m, thresholdPercent: 5}}}\n"
        "rules:\n  - name: fast\n    match: {namespaces: [x]}\n",
        "keda.profiles: removed at 1.0; write a rule per profile, of the same name",
        id="rule-and-profile-share-a-name",
    ),
    pytest.param(
        "rules:\n  - name: a\n    match: {namespaces: [x]}\n    idleWindow: 30s\n",
        "rules[0].idleWindow: must not be shorter than policy.slot",
        id="window-shorter-than-a-slot",
    ),
    pytest.param(
        "rules:\n  - name: a\n    match: {namespaces: [x]}\n    idleWindow: 8h\n",
        "rules[0].idleWindow: must not be longer than policy.idleSinceLookback",
        id="window-beyond-the-lookback",
    ),
]


@pytest.mark.parametrize(("text", "expected"), BAD)
def test_a_bad_rule_fails_naming_its_key(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in problems_of(tmp_path, text)


def test_the_removed_keys_are_refused_naming_their_replacement(tmp_path: Path) -> None:
    text = (
        "api: {maxExemption: 3d}\n"
        "keda: {profiles: {fast: {idleWindow: 10m, thresholdPercent: 5}}}\n"
    )
    result = check_config(str(write(tmp_path, text)))

    assert result.returncode == 2
    assert (
        "api.maxExemption: removed at 1.0; write exemptions.maxDuration in a rule named default, "
        "last in `rules:`" in result.stderr
    )
    assert (
        "keda.profiles: removed at 1.0; write a rule per profile, of the same name, with its "
        "idleWindow and thresholdPercent: a KEDA trigger that names the rule in `profile:` is "
        "judged with them" in result.stderr
    )
    assert result.stdout == ""


def test_check_config_explains_rules_that_can_never_match(tmp_path: Path) -> None:
    text = (
        "rules:\n  - name: team-a\n    match: {namespaces: [team-a]}\n"
        "  - name: team-a-low\n    match: {namespaces: [team-a], priorityClasses: [low]}\n"
    )
    result = check_config(str(write(tmp_path, text)))

    assert result.returncode == 0, result.stderr
    assert (
        "warning: rule team-a-low can never match: rule team-a comes first and selects "
        "everything it selects (namespaces: [team-a])" in result.stderr
    )
    assert "name: team-a-low" in result.stdout


def test_check_config_fails_an_impossible_selector_naming_the_key(tmp_path: Path) -> None:
    text = "rules:\n  - name: jobs\n    match: {ownerKinds: [Job]}\n"
    result = check_config(str(write(tmp_path, text)))

    assert result.returncode == 2
    assert "rules[0].match.ownerKinds: Job not enabled in cluster.ownerKinds" in result.stderr
