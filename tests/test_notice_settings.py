"""The warning stage's settings (ISSUE 15): `policy.warnBefore` and `policy.snooze` make the
default rule's notice, a rule's `warnBefore`, `snooze`, `deleteAfter` and `notify` override
it, and every mistake (a delete that could reach another kind, a target nobody named, a link
nobody can verify) names its key."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest

from autoscaler.core.errors import ConfigError
from autoscaler.domain.notices.notice import NoticeRules, SnoozeBounds
from autoscaler.domain.policy.rules import RuleAction
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings, load_settings
from tests.support.check_config import check_config
from tests.support.domain_builders import rule_named

TARGETS = """
notifications:
  targets:
    ml-slack: {type: slack, urlFile: /etc/iga/slack/url}
    ops-hook: {type: webhook, url: "https://hooks.example.com/gpu", secretFile: /etc/iga/hook/key}
  defaultTargets: [ops-hook]
"""

LADDER = (
    TARGETS
    + """
policy:
  warnBefore: 30m
  snooze: {maxDuration: 12h, perDay: 2}
rules:
  - name: sandbox
    match: {namespaces: [sandbox], ownerKinds: [RayCluster]}
    action: delete
    deleteAfter: 3d
    warnBefore: 1h
    notify: [ml-slack]
  - name: research
    match: {namespaces: [research]}
    action: warn
    snooze: {maxDuration: 48h}
  - name: quiet
    match: {namespaces: [quiet]}
    notify: [ops-hook, ml-slack]
"""
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, text))
    return str(caught.value)


def test_by_default_the_service_warns_a_quarter_hour_ahead_within_the_snooze_bounds() -> None:
    policy = build_policy(Settings())

    assert policy.default_rule.notice == NoticeRules(
        warn_before=timedelta(minutes=15),
        snooze=SnoozeBounds(max_duration=timedelta(hours=24), per_day=3),
    )


def test_each_rule_sets_its_notice_and_inherits_what_it_leaves_unset(tmp_path: Path) -> None:
    sandbox, research, quiet, default = build_policy(load_settings(write(tmp_path, LADDER))).rules

    assert sandbox.action is RuleAction.DELETE
    assert sandbox.notice == NoticeRules(
        warn_before=timedelta(hours=1),
        snooze=SnoozeBounds(max_duration=timedelta(hours=12), per_day=2),
        delete_after=timedelta(days=3),
        notify=("ml-slack",),
    )
    assert research.action is RuleAction.WARN
    assert research.notice.warn_before == timedelta(minutes=30)
    assert research.notice.snooze == SnoozeBounds(max_duration=timedelta(hours=48), per_day=2)
    assert (research.notice.delete_after, research.notice.notify) == (None, ())
    assert quiet.notice.notify == ("ops-hook", "ml-slack")
    assert default.notice.warn_before == timedelta(minutes=30)


def test_zero_warn_before_turns_the_warning_off(tmp_path: Path) -> None:
    policy = build_policy(load_settings(write(tmp_path, "policy: {warnBefore: 0s}\n")))

    assert policy.default_rule.notice.warn_before == timedelta(0)


def test_a_written_default_rule_sets_the_notice_policy_leaves_unset(tmp_path: Path) -> None:
    text = (
        TARGETS + "rules:\n  - name: default\n    warnBefore: 5m\n    snooze: {perDay: 1}\n"
        "    notify: [ml-slack]\n  "
    )
    notice = build_policy(load_settings(write(tmp_path, text))).default_rule.notice

    assert notice.warn_before == timedelta(minutes=5)
    assert notice.snooze == SnoozeBounds(max_duration=timedelta(hours=24), per_day=1)
    assert notice.notify == ("ml-slack",)


RAY_ONLY = "    match: {namespaces: [x], ownerKinds: [RayCluster]}\n"

BAD = [
    pytest.param(
        "rules:\n  - name: a\n" + RAY_ONLY + "    action: delete\n",
        "rules[0].deleteAfter: action delete needs it",
        id="delete-without-delete-after",
    ),
    pytest.param(
        "rules:\n  - name: a\n" + RAY_ONLY + "    deleteAfter: 1d\n",
        "rules[0].deleteAfter: only a rule whose action is delete deletes",
        id="delete-after-on-a-deactivate-rule",
    ),
    pytest.param(
        "rules:\n  - name: a\n    match: {namespaces: [x]}\n    action: delete\n"
        "    deleteAfter: 1d\n",
        "rules[0].action: delete removes RayClusters only",
        id="delete-on-a-rule-that-may-select-other-kinds",
    ),
    pytest.param(
        "cluster: {ownerKinds: {RayJob: {enabled: true, podSelector: 'a={name}'}}}\n"
        "rules:\n  - name: a\n    match: {ownerKinds: [RayCluster, RayJob]}\n"
        "    action: delete\n    deleteAfter: 1d\n",
        "rules[0].action: delete removes RayClusters only",
        id="delete-on-a-rule-that-selects-ray-jobs-too",
    ),
    pytest.param(
        "rules:\n  - name: default\n    action: delete\n    deleteAfter: 1d\n",
        "rules[0].action: delete removes RayClusters only",
        id="delete-as-the-default-rule",
    ),
    pytest.param(
        "rules:\n  - name: a\n" + RAY_ONLY + "    action: delete\n    deleteAfter: 1d\n"
        "    warnBefore: 0s\n",
        "rules[0].warnBefore: action delete needs a warning",
        id="delete-without-a-warning",
    ),
    pytest.param(
        "rules:\n  - name: a\n" + RAY_ONLY + "    action: delete\n    deleteAfter: 0s\n",
        "rules[0].deleteAfter",
        id="delete-after-zero",
    ),
    pytest.param(
        "rules:\n  - name: a\n    match: {namespaces: [x]}\n    action: stop\n",
        "rules[0].action",
        id="unknown-action",
    ),
    pytest.param(
        TARGETS + "rules:\n  - name: a\n    match: {namespaces: [x]}\n    notify: [ml-slak]\n",
        "rules[0].notify: ml-slak is not in notifications.targets",
        id="rule-names-an-unknown-target",
    ),
    pytest.param(
        TARGETS + "rules:\n  - name: a\n    match: {namespaces: [x]}\n    notify: [none]\n",
        "rules[0].notify: none is not a target",
        id="events-only-is-a-namespaces-word-not-a-target",
    ),
    pytest.param(
        "notifications: {defaultTargets: [ops]}\n",
        "notifications.defaultTargets: ops is not in notifications.targets",
        id="default-target-unknown",
    ),
    pytest.param(
        "notifications: {targets: {ops: {type: webhook}}}\n",
        "notifications.targets.ops.url: set exactly one of url and urlFile",
        id="target-without-an-address",
    ),
    pytest.param(
        "notifications: {targets: {ops: {type: webhook, url: 'https://a.example', urlFile: /u}}}\n",
        "notifications.targets.ops.url: set exactly one of url and urlFile",
        id="target-with-two-addresses",
    ),
    pytest.param(
        "notifications: {targets: {ops: {type: webhook, url: 'ftp://a.example'}}}\n",
        "notifications.targets.ops.url: an http:// or https:// address",
        id="target-url-not-http",
    ),
    pytest.param(
        "notifications: {targets: {chat: {type: slack, urlFile: /u, secretFile: /k}}}\n",
        "notifications.targets.chat.secretFile: Slack verifies no signature of ours",
        id="secret-file-on-a-slack-target",
    ),
    pytest.param(
        "notifications: {targets: {Ops_Team: {type: webhook, urlFile: /u}}}\n",
        "notifications.targets.Ops_Team: a name is 1-32 lowercase letters",
        id="target-name-not-a-label",
    ),
    pytest.param(
        "notifications: {targets: {none: {type: webhook, urlFile: /u}}}\n",
        "notifications.targets.none: none is reserved",
        id="target-named-none",
    ),
    pytest.param(
        "notifications: {links: {baseUrl: 'https://gpu.example.com'}}\n",
        "notifications.links.signingKeyFile: needed with baseUrl",
        id="links-without-a-signing-key",
    ),
    pytest.param(
        "notifications: {links: {signingKeyFile: /k}}\n",
        "notifications.links.baseUrl: needed with signingKeyFile",
        id="signing-key-without-links",
    ),
    pytest.param(
        "notifications: {links: {ttl: 0s}}\n",
        "notifications.links.ttl: must be longer than 0s",
        id="links-that-expire-at-once",
    ),
    pytest.param(
        "notifications: {links: {choices: [4h, 0s]}}\n",
        "notifications.links.choices[1]: must be longer than 0s",
        id="a-keep-button-of-nothing",
    ),
    pytest.param(
        "notifications: {retry: {initialBackoff: 1m, maxBackoff: 10s}}\n",
        "notifications.retry.maxBackoff: must not be shorter than initialBackoff",
        id="backoff-ceiling-below-its-start",
    ),
    pytest.param(
        "rules:\n  - name: a\n    match: {namespaces: [x]}\n    snooze: {perDay: -1}\n",
        "rules[0].snooze.perDay",
        id="negative-snoozes-per-day",
    ),
    pytest.param("policy: {snooze: {perDay: -1}}\n", "policy.snooze.perDay", id="policy-per-day"),
    pytest.param(
        "policy: {snooze: {maxDuration: 0s}}\n", "policy.snooze.maxDuration", id="zero-snooze"
    ),
    pytest.param("policy: {warnBefore: -5m}\n", "policy.warnBefore", id="negative-warning"),
    pytest.param(
        "policy: {warnBefore: 10m}\nrules:\n  - name: default\n    warnBefore: 20m\n",
        "rules[0].warnBefore and policy.warnBefore both set the default rule's warnBefore",
        id="policy-and-default-rule-both-set-the-warning",
    ),
    pytest.param(
        "policy: {snooze: {perDay: 1}}\nrules:\n  - name: default\n    snooze: {perDay: 2}\n",
        "rules[0].snooze.perDay and policy.snooze.perDay both set the default rule's "
        "snooze.perDay: keep one",
        id="policy-and-default-rule-both-set-snoozes-per-day",
    ),
    pytest.param(
        "policy: {snooze: {maxDuration: 1h}}\nrules:\n  - name: default\n"
        "    snooze: {maxDuration: 2h}\n",
        "rules[0].snooze.maxDuration and policy.snooze.maxDuration both set the default "
        "rule's snooze.maxDuration: keep one",
        id="policy-and-default-rule-both-set-the-longest-snooze",
    ),
]


@pytest.mark.parametrize(("text", "expected"), BAD)
def test_a_bad_notice_setting_fails_naming_its_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    assert expected in problems_of(tmp_path, text)


def test_the_default_rule_may_set_snooze_bounds_policy_leaves_unset(tmp_path: Path) -> None:
    text = (
        "policy: {snooze: {perDay: 1}}\nrules:\n  - name: default\n    snooze: {maxDuration: 2h}\n"
    )
    bounds = build_policy(load_settings(write(tmp_path, text))).default_rule.notice.snooze

    assert bounds == SnoozeBounds(max_duration=timedelta(hours=2), per_day=1)


def test_check_config_exits_non_zero_naming_a_delete_rule_without_delete_after(
    tmp_path: Path,
) -> None:
    text = "rules:\n  - name: sweep\n" + RAY_ONLY + "    action: delete\n"
    result = check_config(str(write(tmp_path, text)))

    assert result.returncode == 2
    assert "rules[0].deleteAfter: action delete needs it" in result.stderr


EXAMPLE = Path(__file__).resolve().parents[1] / "config" / "example.yaml"


def uncommented_example() -> str:
    """config/example.yaml with its commented targets and rules switched on, as a reader would
    copy them: `targets: {}` and `rules: []` opened, their `#  ` entries un-commented."""
    text = EXAMPLE.read_text(encoding="utf-8")
    text = text.replace("  targets: {}\n", "  targets:\n").replace("rules: []\n", "rules:\n")
    text = re.sub(r"^  #  ", "    ", text, flags=re.MULTILINE)
    return re.sub(r"^#  ", "  ", text, flags=re.MULTILINE)


def test_the_examples_commented_targets_and_rules_are_a_valid_configuration(
    tmp_path: Path,
) -> None:
    settings = load_settings(write(tmp_path, uncommented_example()), environ={})

    assert set(settings.notifications.targets) == {"ml-slack", "team-hook"}
    sandbox = rule_named(build_policy(settings), "sandbox")
    assert (sandbox.action, sandbox.notice.delete_after) == (RuleAction.DELETE, timedelta(days=3))
