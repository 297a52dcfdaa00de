"""Every conversion from settings to the domain's rules, in one place."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from autoscaler.domain.notices.notice import NoticeRules, SnoozeBounds
from autoscaler.domain.policy.decisions import Policy
from autoscaler.domain.policy.rules import (
    DEFAULT_RULE,
    ExemptionBounds,
    ExemptionRight,
    Reclaim,
    Rule,
    RuleAction,
)
from autoscaler.domain.usage.idleness import UsageRules
from autoscaler.settings.rule_settings import RuleSettings, written_default
from autoscaler.settings.tree import Settings


def build_policy(settings: Settings) -> Policy:
    policy = settings.policy
    default = default_rule(settings)
    scoped = tuple(
        scoped_rule(rule, default=default) for rule in settings.rules if rule.name != DEFAULT_RULE
    )
    return Policy(
        rules=(*scoped, default),
        actionable_kinds=enabled_owner_kinds(settings),
        protected_priority_classes=frozenset(policy.protected_priority_classes),
        include_namespaces=frozenset(policy.namespaces.include),
        exclude_namespaces=frozenset(policy.namespaces.exclude),
        max_deactivations_per_cycle=policy.max_deactivations_per_cycle,
        dry_run=policy.dry_run,
        via_kueue_boost=policy.via_kueue.priority_boost,
    )


def default_rule(settings: Settings) -> Rule:
    """`policy:`, with what a written `default` rule adds (a week's exemptions unless it
    says otherwise)."""
    policy = settings.policy
    base = Rule(
        name=DEFAULT_RULE,
        usage=UsageRules(
            threshold=policy.threshold_percent / 100,
            window=policy.idle_window,
            slot=policy.slot,
            min_coverage=policy.min_coverage,
            stale_after=policy.stale_after,
            max_loading=policy.max_loading,
            not_running_after=policy.not_running_after,
        ),
        grace_period=policy.grace_period,
        exemptions=ExemptionBounds(),
        notice=NoticeRules(
            warn_before=policy.warn_before,
            snooze=SnoozeBounds(
                max_duration=policy.snooze.max_duration, per_day=policy.snooze.per_day
            ),
        ),
    )
    written = written_default(settings.rules)
    return base if written is None else scoped_rule(written, default=base)


def scoped_rule(rule: RuleSettings, *, default: Rule) -> Rule:
    """The rule as written, each unset knob inherited from the default rule."""
    usage = default.usage
    if rule.idle_window is not None:
        usage = replace(usage, window=rule.idle_window)
    if rule.threshold_percent is not None:
        usage = replace(usage, threshold=rule.threshold_percent / 100)
    if rule.max_loading is not None:
        usage = replace(usage, max_loading=rule.max_loading)
    if rule.not_running_after is not None:
        usage = replace(usage, not_running_after=rule.not_running_after)
    bounds = default.exemptions
    if rule.exemptions.max_duration is not None:
        bounds = replace(bounds, max_duration=rule.exemptions.max_duration)
    if rule.exemptions.allowed_to is not None:
        bounds = replace(bounds, allowed_to=ExemptionRight(rule.exemptions.allowed_to))
    return Rule(
        name=rule.name,
        selector=rule.match.selector() if rule.match is not None else default.selector,
        usage=usage,
        grace_period=rule.grace_period if rule.grace_period is not None else default.grace_period,
        reclaim=Reclaim(rule.reclaim) if rule.reclaim is not None else default.reclaim,
        action=RuleAction(rule.action) if rule.action is not None else default.action,
        exemptions=bounds,
        notice=notice_rules(rule, default=default.notice),
    )


def notice_rules(rule: RuleSettings, *, default: NoticeRules) -> NoticeRules:
    """The rule's warning stage; `deleteAfter` is its own (only a `delete` rule has one), the
    other knobs inherit the default rule's when unset."""
    snooze = default.snooze
    if rule.snooze.max_duration is not None:
        snooze = replace(snooze, max_duration=rule.snooze.max_duration)
    if rule.snooze.per_day is not None:
        snooze = replace(snooze, per_day=rule.snooze.per_day)
    return NoticeRules(
        warn_before=rule.warn_before if rule.warn_before is not None else default.warn_before,
        snooze=snooze,
        delete_after=rule.delete_after,
        notify=tuple(rule.notify) if rule.notify is not None else default.notify,
    )


def enabled_owner_kinds(settings: Settings) -> frozenset[str]:
    """The owner kinds the service may act on and write: the policy and the actuator agree."""
    return frozenset(kind for kind, table in settings.cluster.owner_kinds.items() if table.enabled)


def longest_loading(settings: Settings) -> timedelta:
    """The longest maxLoading of every rule: how far back the evidence reads must reach for
    each loading bound to hold."""
    return build_policy(settings).longest_loading
