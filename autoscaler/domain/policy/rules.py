"""Scoped rules: an ordered list, first match wins, a catch-all default closes it.

A rule selects workloads (by namespace, queue, cohort, priority class, GPU model, owner) and
sets how they are judged (window, threshold, grace), what the service may do (observe,
warn, deactivate or delete, always or only when someone waits), the notice it gives first and
the bounds of self-service exemptions and snoozes.

Matching says why: each earlier rule that did not match gives its reason. A selector that
cannot be evaluated this cycle (unreadable namespace labels, no GPU model known) makes the
match unknown: that workload gets no action, and the match never falls through to a later
rule, whose numbers were never meant for it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum

from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.notices.notice import NoticeRules
from autoscaler.domain.usage.idleness import UsageRules

DEFAULT_RULE = "default"


class Reclaim(StrEnum):
    """When an idle workload may be stopped."""

    ALWAYS = "always"  # whenever it is idle past its window (the behaviour before rules)
    WHEN_CONTENDED = "when-contended"  # only when a waiting Workload would be let in
    # Marked for Kueue's own preemption (a negative priority boost on the Workload, KEP-7990)
    # once its notice has run: Kueue evicts it only for a waiter, with all of its own rules;
    # then deactivated at once (domain/policy/via_kueue.py, docs/RECLAIM.md)
    VIA_KUEUE = "via-kueue"


class RuleAction(StrEnum):
    """What the service does with a workload its rule judges idle."""

    OBSERVE = "observe"  # report the state, never act
    WARN = "warn"  # warn and notify as a stop would, but never stop (ISSUE 15)
    DEACTIVATE = "deactivate"  # warn `warnBefore` ahead, then set spec.active=false
    DELETE = "delete"  # as deactivate; then delete the owner inactive for `deleteAfter`


class ExemptionRight(StrEnum):
    """Who may exempt a workload through the API."""

    WORKLOAD_EDITORS = "workload-editors"  # anyone allowed to patch the Workload
    ADMINS = "admins"  # only callers with the service's admin permission


@dataclass(frozen=True)
class ExemptionBounds:
    max_duration: timedelta = timedelta(days=7)
    allowed_to: ExemptionRight = ExemptionRight.WORKLOAD_EDITORS


@dataclass(frozen=True)
class Selector:
    """What a rule selects; None is "any", every set criterion must hold (AND)."""

    namespaces: tuple[str, ...] | None = None
    namespace_labels: Mapping[str, str] | None = None  # equality, like matchLabels
    local_queues: tuple[str, ...] | None = None
    cluster_queues: tuple[str, ...] | None = None
    cohorts: tuple[str, ...] | None = None
    priority_classes: tuple[str, ...] | None = None
    gpu_models: tuple[str, ...] | None = None  # dcgm-exporter's modelName
    owner_kinds: tuple[str, ...] | None = None
    owner_labels: Mapping[str, str] | None = None  # equality, like matchLabels


@dataclass(frozen=True)
class Rule:
    name: str
    usage: UsageRules
    grace_period: timedelta
    selector: Selector = field(default_factory=Selector)
    reclaim: Reclaim = Reclaim.ALWAYS
    action: RuleAction = RuleAction.DEACTIVATE
    exemptions: ExemptionBounds = field(default_factory=ExemptionBounds)
    notice: NoticeRules = field(default_factory=NoticeRules)  # warning, snooze, deleteAfter


@dataclass(frozen=True)
class Miss:
    rule: str
    why: str

    def __str__(self) -> str:
        return f"rule {self.rule}: {self.why}"


@dataclass(frozen=True)
class RuleMatch:
    """The rule a workload falls under, or (unknown set) the rule that could not be judged."""

    rule: Rule
    misses: tuple[Miss, ...] = ()  # each earlier rule, and why it did not match
    unknown: str | None = None  # why `rule` could not be evaluated: no action

    @property
    def known(self) -> bool:
        return self.unknown is None


# One criterion's verdict: None matches, ("miss", why) or ("unknown", why).
_Verdict = tuple[str, str] | None
MISS, UNKNOWN = "miss", "unknown"


def match_rule(
    workload: WorkloadInfo, rules: Sequence[Rule], *, gpu_models: Collection[str]
) -> RuleMatch:
    """First match wins; an unknown verdict stops the search (never a fall-through)."""
    misses: list[Miss] = []
    for rule in rules:
        verdict = evaluate(rule.selector, workload, gpu_models=gpu_models)
        if verdict is None:
            return RuleMatch(rule, tuple(misses))
        kind, why = verdict
        if kind == UNKNOWN:
            return RuleMatch(rule, tuple(misses), unknown=why)
        misses.append(Miss(rule.name, why))
    return RuleMatch(rules[-1], tuple(misses), unknown="no rule matches (no default rule)")


def evaluate(
    selector: Selector, workload: WorkloadInfo, *, gpu_models: Collection[str]
) -> _Verdict:
    """A definite miss wins over an unknown criterion: the rule cannot match either way."""
    verdicts = [v for v in _criteria(selector, workload, gpu_models) if v is not None]
    misses = [v for v in verdicts if v[0] == MISS]
    first = misses or verdicts
    return first[0] if first else None


def _criteria(
    selector: Selector, workload: WorkloadInfo, gpu_models: Collection[str]
) -> list[_Verdict]:
    owner = workload.owner
    cq = workload.cluster_queue
    return [
        _one_of("namespace", workload.ref.namespace, selector.namespaces),
        _labels_of_namespace(workload, selector.namespace_labels),
        _one_of("local queue", workload.queue or None, selector.local_queues),
        _one_of("ClusterQueue", cq, selector.cluster_queues),
        _one_of("cohort", workload.cohort, selector.cohorts, none=f"ClusterQueue {cq} has none"),
        _one_of("priority class", workload.priority_class, selector.priority_classes),
        _models(gpu_models, selector.gpu_models),
        _one_of("owner kind", owner.kind if owner else None, selector.owner_kinds),
        _labels("owner", workload.owner_labels, selector.owner_labels),
    ]


def _one_of(
    what: str, actual: str | None, wanted: tuple[str, ...] | None, *, none: str = ""
) -> _Verdict:
    if wanted is None:
        return None
    listed = f"[{', '.join(wanted)}]"
    if actual is None:
        return MISS, f"no {what} ({none or 'none known'}), needs one of {listed}"
    if actual in wanted:
        return None
    return MISS, f"{what} {actual} is not one of {listed}"


def _labels_of_namespace(workload: WorkloadInfo, wanted: Mapping[str, str] | None) -> _Verdict:
    if wanted is None:
        return None
    if workload.namespace_labels is None:
        namespace = workload.ref.namespace
        return UNKNOWN, f"namespace {namespace}'s labels could not be read (namespaceLabels)"
    return _labels(f"namespace {workload.ref.namespace}", workload.namespace_labels, wanted)


def _labels(what: str, actual: Mapping[str, str], wanted: Mapping[str, str] | None) -> _Verdict:
    for key, value in sorted((wanted or {}).items()):
        found = actual.get(key)
        if found is None:
            return MISS, f"{what} has no label {key}={value}"
        if found != value:
            return MISS, f"{what} has {key}={found}, not {key}={value}"
    return None


def _models(known: Collection[str], wanted: tuple[str, ...] | None) -> _Verdict:
    if wanted is None:
        return None
    if not known:
        return UNKNOWN, "no GPU model known this cycle (gpuModels)"
    others = sorted(set(known) - set(wanted))
    if others:
        return MISS, f"GPU model {', '.join(others)} is not one of [{', '.join(wanted)}]"
    return None
