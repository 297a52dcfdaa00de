"""The checks of the warning stage's settings that no single section can make (ISSUE 15):
the ladder's last rung (`delete`) and its `deleteAfter`, notification target names, and the
links, each problem naming its key.

A bound people must not pass (who gets deleted, where a message may go) is checked here once,
at start-up, so a bad file fails `check-config` and `serve` alike instead of a cycle later.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from autoscaler.domain.notices.deletion import DELETABLE_KINDS
from autoscaler.domain.notices.routing import EVENTS_ONLY
from autoscaler.domain.policy.rules import DEFAULT_RULE
from autoscaler.settings.notifications import TARGET_NAME, NotificationSettings, TargetSettings
from autoscaler.settings.rule_settings import RuleSettings, written_default

if TYPE_CHECKING:  # the tree imports this module; only its type is needed here
    from autoscaler.settings.tree import Settings


def check_notices(settings: Settings) -> list[str]:
    """Every problem of the rules' notice knobs and of `notifications:`; empty when sound."""
    known = set(settings.notifications.targets)
    problems: list[str] = []
    for index, rule in enumerate(settings.rules):
        problems += _ladder(index, rule, settings)
        if rule.notify is not None:
            problems += _names(f"rules[{index}].notify", rule.notify, known=known)
    problems += check_notifications(settings.notifications)
    return problems


def check_notifications(section: NotificationSettings) -> list[str]:
    """The `notifications:` section on its own: targets, default targets, links, retries."""
    problems = []
    for name, target in section.targets.items():
        problems += _target(f"notifications.targets.{name}", name, target)
    problems += _names(
        "notifications.defaultTargets", section.default_targets, known=set(section.targets)
    )
    problems += _links(section)
    retry = section.retry
    if retry.max_backoff < retry.initial_backoff:
        problems.append("notifications.retry.maxBackoff: must not be shorter than initialBackoff")
    return problems


def effective_action(rule: RuleSettings, rules: Sequence[RuleSettings]) -> str:
    """What the rule does: its own action, else the written default rule's, else deactivate."""
    default = written_default(rules)
    inherited = default.action if default is not None else None
    return rule.action or inherited or "deactivate"


def _ladder(index: int, rule: RuleSettings, settings: Settings) -> list[str]:
    key = f"rules[{index}]"
    deletes = effective_action(rule, settings.rules) == "delete"
    if not deletes:
        if rule.delete_after is None:
            return []
        return [f"{key}.deleteAfter: only a rule whose action is delete deletes: remove it"]
    problems = []
    if rule.delete_after is None:
        problems.append(
            f"{key}.deleteAfter: action delete needs it (how long a deactivated RayCluster "
            "stays before it is deleted)"
        )
    kinds = rule.match.owner_kinds if rule.match is not None else None
    if rule.name == DEFAULT_RULE or kinds is None or set(kinds) != DELETABLE_KINDS:
        problems.append(
            f"{key}.action: delete removes RayClusters only: the rule must say "
            f"match.ownerKinds: [{', '.join(sorted(DELETABLE_KINDS))}]"
        )
    if _warn_before(rule, settings) == timedelta(0):
        problems.append(f"{key}.warnBefore: action delete needs a warning: longer than 0s")
    return problems


def _warn_before(rule: RuleSettings, settings: Settings) -> timedelta:
    default = written_default(settings.rules)
    for candidate in (rule.warn_before, default.warn_before if default else None):
        if candidate is not None:
            return candidate
    return settings.policy.warn_before


def _names(key: str, names: Sequence[str], *, known: set[str]) -> list[str]:
    problems = []
    for name in names:
        if name == EVENTS_ONLY:
            problems.append(
                f"{key}: {EVENTS_ONLY} is not a target (a namespace's annotation "
                f"idle-gpu-autoscaler.io/notify: {EVENTS_ONLY} means Events only)"
            )
        elif name not in known:
            problems.append(f"{key}: {name} is not in notifications.targets")
    return problems


def _target(key: str, name: str, target: TargetSettings) -> list[str]:
    problems = []
    if name == EVENTS_ONLY:
        problems.append(f"{key}: {EVENTS_ONLY} is reserved (a namespace's Events only)")
    elif not _is_target_name(name):
        problems.append(f"{key}: a name is 1-32 lowercase letters, digits or '-'")
    if (target.url is None) == (target.url_file is None):
        problems.append(f"{key}.url: set exactly one of url and urlFile")
    elif target.url is not None and not _is_http(target.url):
        problems.append(f"{key}.url: an http:// or https:// address")
    if target.type == "slack" and target.secret_file is not None:
        problems.append(
            f"{key}.secretFile: Slack verifies no signature of ours; the secret is the URL "
            "itself (urlFile)"
        )
    if target.timeout <= timedelta(0):
        problems.append(f"{key}.timeout: must be longer than 0s")
    return problems


def _links(section: NotificationSettings) -> list[str]:
    links, key = section.links, "notifications.links"
    problems = []
    if links.base_url is not None and links.signing_key_file is None:
        problems.append(f"{key}.signingKeyFile: needed with baseUrl, to sign the links")
    if links.signing_key_file is not None and links.base_url is None:
        problems.append(f"{key}.baseUrl: needed with signingKeyFile, the address links point at")
    if links.base_url is not None and not _is_http(links.base_url):
        problems.append(f"{key}.baseUrl: an http:// or https:// address")
    if links.ttl <= timedelta(0):
        problems.append(f"{key}.ttl: must be longer than 0s")
    if links.base_url is not None and not links.choices:
        problems.append(f"{key}.choices: at least one snooze length, or links have no button")
    problems += [
        f"{key}.choices[{place}]: must be longer than 0s"
        for place, choice in enumerate(links.choices)
        if choice <= timedelta(0)
    ]
    return problems


def _is_http(url: str) -> bool:
    parsed = urlparse(url)
    return parsed.scheme in ("http", "https") and bool(parsed.netloc)


def _is_target_name(name: str) -> bool:
    return re.fullmatch(TARGET_NAME, name) is not None
