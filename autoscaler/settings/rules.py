"""Every conversion from settings to the domain's rules, in one place."""

from __future__ import annotations

from autoscaler.domain.idleness import UsageRules
from autoscaler.domain.policy import Policy
from autoscaler.settings.tree import Settings


def build_policy(settings: Settings) -> Policy:
    policy = settings.policy
    return Policy(
        rules=UsageRules(
            threshold=policy.threshold_percent / 100,
            window=policy.idle_window,
            slot=policy.slot,
            min_coverage=policy.min_coverage,
            stale_after=policy.stale_after,
        ),
        grace_period=policy.grace_period,
        actionable_kinds=enabled_owner_kinds(settings),
        protected_priority_classes=frozenset(policy.protected_priority_classes),
        include_namespaces=frozenset(policy.namespaces.include),
        exclude_namespaces=frozenset(policy.namespaces.exclude),
        max_deactivations_per_cycle=policy.max_deactivations_per_cycle,
        dry_run=policy.dry_run,
    )


def enabled_owner_kinds(settings: Settings) -> frozenset[str]:
    """The owner kinds the service may act on and write: the policy and the actuator agree."""
    return frozenset(kind for kind, table in settings.cluster.owner_kinds.items() if table.enabled)
