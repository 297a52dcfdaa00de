"""Each workload's rule as the history shows it, and the view a replay judges it at.

The history (the GPU series, and `--queue-of`) shows a workload's namespace, its GPUs'
`modelName`, its owner kind (from kube-state-metrics' owner series, `owners.py`, or KubeRay's
pod names) and, with `--queue-of`, its ClusterQueue. A rule selecting on anything else
(namespace labels, local queue, cohort, priority class, owner labels; a ClusterQueue the map
does not give) cannot be evaluated: unless a criterion the history shows already rules it out,
that workload's rule is unknown and it is not judged. It never falls through to a later rule,
whose numbers were never meant for it, as in the live service (`domain/policy/rules.py`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from autoscaler.backtest.identity import WorkloadKey
from autoscaler.backtest.variant import PER_RULE, Variant
from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.decisions import Policy
from autoscaler.domain.policy.rules import MISS, Reclaim, Rule, RuleAction, Selector, evaluate

EVERYONE = "*"  # the one view of a variant that judges every workload alike
# Selector fields the history never shows, by their name in a rule's `match`.
_HIDDEN = {
    "namespace_labels": "namespaceLabels",
    "local_queues": "localQueues",
    "cohorts": "cohorts",
    "priority_classes": "priorityClasses",
    "owner_labels": "ownerLabels",
}


@dataclass(frozen=True)
class HistoryMatch:
    rule: Rule
    unknown: str | None = None  # why the rule cannot be evaluated from history: not judged

    @property
    def known(self) -> bool:
        return self.unknown is None


def match_from_history(
    key: WorkloadKey, *, models: Collection[str], rules: Sequence[Rule], queue_of: Mapping[str, str]
) -> HistoryMatch:
    """First match wins, as live; a criterion the history cannot show stops the search."""
    queue = queue_of.get(key.namespace)
    facts = _facts(key, cluster_queue=queue)
    for rule in rules:
        hidden = _hidden(rule.selector, queue_known=queue is not None)
        shown = replace(rule.selector, **dict.fromkeys(hidden))
        verdict = evaluate(shown, facts, gpu_models=models)
        if verdict is not None and verdict[0] == MISS:
            continue
        if verdict is not None:
            return HistoryMatch(rule, f"rule {rule.name}: {verdict[1]}")
        if hidden:
            keys = ", ".join(hidden.values())
            why = f"rule {rule.name} selects on {keys}, which the history does not show"
            return HistoryMatch(rule, why)
        return HistoryMatch(rule)
    return HistoryMatch(rules[-1], "no rule matches (no default rule)")


def _hidden(selector: Selector, *, queue_known: bool) -> dict[str, str]:
    found = {name: key for name, key in _HIDDEN.items() if getattr(selector, name) is not None}
    if selector.cluster_queues is not None and not queue_known:
        found["cluster_queues"] = "clusterQueues (no --queue-of for this namespace)"
    return found


def _facts(key: WorkloadKey, *, cluster_queue: str | None) -> WorkloadInfo:
    epoch = datetime(1970, 1, 1, tzinfo=UTC)  # never read: only the selector's facts are
    return WorkloadInfo(
        ref=WorkloadRef(key.namespace, key.name),
        uid="",
        queue="",
        owner=key.owner,
        active=True,
        admitted=True,
        admitted_at=None,
        created_at=epoch,
        expected_pods=0,
        cluster_queue=cluster_queue,
    )


@dataclass(frozen=True)
class View:
    """How one replay judges the workloads of one rule (or, `EVERYONE`, all of them)."""

    rule: str
    window: timedelta
    threshold: float
    span: int  # the window in slots
    reclaim: str
    observe: bool  # the rule's action is observe: never a would-be deactivation
    policy: Policy  # decides this view's workloads: the one rule, nothing else


def views_of(variant: Variant, policy: Policy, *, slot: int) -> dict[str, View]:
    """A uniform variant: the default rule at its window and threshold, deactivating, for
    everyone. A per-rule variant: each rule as written, its reclaim mode unless forced."""
    if not variant.by_rule:
        default = policy.default_rule
        usage = replace(default.usage, window=variant.window, threshold=variant.threshold)
        rule = replace(default, usage=usage, action=RuleAction.DEACTIVATE)
        return {EVERYONE: _view(rule, policy, slot=slot, reclaim=variant.reclaim)}
    return {
        rule.name: _view(
            rule,
            policy,
            slot=slot,
            reclaim=rule.reclaim.value if variant.reclaim == PER_RULE else variant.reclaim,
        )
        for rule in policy.rules
    }


def _view(rule: Rule, policy: Policy, *, slot: int, reclaim: str) -> View:
    # The one rule keeps the default rule's name, exemptions and notice, as the loop's own
    # default would: only what judges and acts is the viewed rule's.
    alone = replace(
        policy.default_rule,
        usage=rule.usage,
        grace_period=rule.grace_period,
        action=rule.action,
        reclaim=Reclaim(reclaim),
    )
    single = replace(policy, rules=(alone,))
    return View(
        rule=rule.name,
        window=rule.usage.window,
        threshold=rule.usage.threshold,
        span=int(rule.usage.window.total_seconds()) // slot,
        reclaim=reclaim,
        observe=rule.action is RuleAction.OBSERVE,
        policy=single,
    )


def policy_variant(policy: Policy) -> Variant:
    """The policy as configured: uniform when it is a single deactivating default rule (as
    before rules), else each workload under its rule; reclaim is the rules' common mode."""
    window, threshold = policy.default_rule.usage.window, policy.default_rule.usage.threshold
    acting = {r.reclaim.value for r in policy.rules if r.action is RuleAction.DEACTIVATE}
    reclaim = acting.pop() if len(acting) == 1 else (PER_RULE if acting else Reclaim.ALWAYS)
    plain = len(policy.rules) == 1 and policy.default_rule.action is RuleAction.DEACTIVATE
    return Variant(window, threshold, str(reclaim), by_rule=not plain)
