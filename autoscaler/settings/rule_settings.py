"""The `rules:` section: an ordered list of scoped rules, first match wins.

Each rule selects workloads (`match`) and sets how they are judged and what may be done.
A knob a rule leaves unset inherits the default rule's, and the default rule (which closes the
list whatever is written) is `policy:` itself, so a file without `rules:` behaves as before.
A rule named `default` may be written last, without `match`, to set the default rule's
reclaim, action, exemptions and notice (warning, snooze, notify); a knob set both there and in
`policy:` is an error naming both.

The older spellings of what rules now say, `api.maxExemption` and `keda.profiles`, were removed
at 1.0: a file that still has them is refused naming the replacement (`settings/tree.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from operator import attrgetter
from typing import TYPE_CHECKING, Literal

from pydantic import ConfigDict, Field, JsonValue

from autoscaler.domain.notices.deletion import DELETABLE_KINDS
from autoscaler.domain.policy.checks import impossible
from autoscaler.domain.policy.rules import DEFAULT_RULE, Selector
from autoscaler.settings.base import POSITIVE, Duration, Section, format_duration
from autoscaler.settings.notifications import TARGET_NAME, target_name_problems
from autoscaler.settings.problems import CrossCheck
from autoscaler.settings.snooze import RuleSnoozeSettings

if TYPE_CHECKING:  # the tree imports this module; only its type is needed here
    from autoscaler.settings.tree import Settings

RULE_NAME = r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$"  # also a KEDA profile and a metric label
NAMED: dict[str, JsonValue] = {"items": {"minLength": 1}}  # the chart's schema: no empty name


class MatchSettings(Section):
    """What a rule selects. Every key set must hold (AND); a key left out matches anything;
    within a list, any entry matches (OR). An empty list matches nothing and is an error."""

    namespaces: list[str] | None = Field(
        None, description="Namespace names.", json_schema_extra=NAMED
    )
    namespace_labels: dict[str, str] | None = Field(
        None,
        description="Labels the namespace must carry, key=value equality like `matchLabels`. "
        "When the namespace's labels cannot be read, the workload's rule is unknown (no action) "
        "rather than the next rule's.",
    )
    local_queues: list[str] | None = Field(
        None, description="Kueue LocalQueue names.", json_schema_extra=NAMED
    )
    cluster_queues: list[str] | None = Field(
        None,
        description="Kueue ClusterQueue names (the one that admitted the workload).",
        json_schema_extra=NAMED,
    )
    cohorts: list[str] | None = Field(
        None, description="Cohorts of the workload's ClusterQueue.", json_schema_extra=NAMED
    )
    priority_classes: list[str] | None = Field(
        None,
        description="(Workload)PriorityClass names, as the Workload names them.",
        json_schema_extra=NAMED,
    )
    gpu_models: list[str] | None = Field(
        None,
        description="dcgm-exporter `modelName` values (e.g. `NVIDIA H100 80GB HBM3`); every GPU "
        "of the workload must be one of them. No model known this cycle: the rule is unknown.",
        json_schema_extra=NAMED,
    )
    owner_kinds: list[str] | None = Field(
        None,
        description="Owner kinds (RayCluster, RayJob, Job); each must be enabled.",
        json_schema_extra=NAMED,
    )
    owner_labels: dict[str, str] | None = Field(
        None, description="Labels the owner (e.g. the RayCluster) must carry, equality."
    )

    def selector(self) -> Selector:
        def listed(values: list[str] | None) -> tuple[str, ...] | None:
            return None if values is None else tuple(values)

        return Selector(
            namespaces=listed(self.namespaces),
            namespace_labels=self.namespace_labels,
            local_queues=listed(self.local_queues),
            cluster_queues=listed(self.cluster_queues),
            cohorts=listed(self.cohorts),
            priority_classes=listed(self.priority_classes),
            gpu_models=listed(self.gpu_models),
            owner_kinds=listed(self.owner_kinds),
            owner_labels=self.owner_labels,
        )


class RuleExemptionSettings(Section):
    max_duration: Duration | None = Field(
        None,
        description="Longest exemption (API or hand-set `exempt-until`) for this rule's "
        "workloads; longer hand-set values are cut to now + this once, keeping the original. "
        "Unset: the default rule's, a week: it covers a holiday demo without letting a "
        "forgotten exemption hold GPUs for months.",
        json_schema_extra=POSITIVE,
    )
    allowed_to: Literal["workload-editors", "admins"] | None = Field(
        None,
        description="Who may exempt through the API: `workload-editors` (anyone allowed to "
        "patch the Workload, as before rules) or `admins` (only callers with the service's "
        "admin permission, api.admin), for bounds users must not bypass. Unset: the default "
        "rule's (workload-editors).",
    )


class RuleSettings(Section):
    # What the service checks across keys (settings/rule_settings.py), the chart's schema too.
    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {
                    "if": {"properties": {"action": {"const": "delete"}}, "required": ["action"]},
                    "then": {"required": ["deleteAfter"]},
                }
            ]
        }
    )

    name: str = Field(
        pattern=RULE_NAME,
        description="1-32 lowercase letters, digits or '-'. Decisions, logs and `explain` name "
        "it; a KEDA trigger may pick its view with `profile: <name>`.",
    )
    match: MatchSettings | None = Field(
        None, description="What the rule selects; unset selects everything (only `default`)."
    )
    idle_window: Duration | None = Field(
        None, description="How long every GPU must stay idle. Unset: policy.idleWindow."
    )
    threshold_percent: float | None = Field(
        None,
        ge=0,
        lt=100,
        description="Utilization (percent) at or below which a GPU is idle. Unset: "
        "policy.thresholdPercent.",
    )
    grace_period: Duration | None = Field(
        None, description="No action this long after admission. Unset: policy.gracePeriod."
    )
    max_loading: Duration | None = Field(
        None,
        description="How long loading at near-zero compute counts as activity. Unset: "
        "policy.maxLoading.",
    )
    not_running_after: Duration | None = Field(
        None,
        gt=timedelta(0),
        description="How long an admitted workload may hold its quota while none of its GPU "
        "pods runs before the rule's action is due. Unset: policy.notRunningAfter.",
    )
    reclaim: Literal["always", "when-contended", "via-kueue"] | None = Field(
        None,
        description="`always`: stop an idle workload whatever waits (before rules, the only "
        "mode). `when-contended`: only when a pending Workload it would let in waits. "
        "`via-kueue` (opt-in; Kueue's PriorityBoost gate): once the notice has run, mark the "
        "Workload with policy.viaKueue.priorityBoost so Kueue preempts it first, by its own "
        "rules, for a waiter; deactivated as soon as Kueue preempts it; the mark removed when "
        "it is busy, exempt or snoozed again; nothing at all where the gate is off or unknown "
        "(docs/RECLAIM.md). Unset: the default rule's (always).",
    )
    action: Literal["observe", "warn", "deactivate", "delete"] | None = Field(
        None,
        description="The ladder: `observe`: report the state, never act (try a rule out "
        "first). `warn`: warn and notify as a stop would, never stop. `deactivate`: warn "
        "`warnBefore` ahead, then set spec.active=false. `delete`: as deactivate, then delete "
        "the RayCluster once inactive for `deleteAfter` (opt-in; match.ownerKinds must be "
        "[RayCluster]). Unset: the default rule's (deactivate).",
    )
    exemptions: RuleExemptionSettings = Field(
        default_factory=RuleExemptionSettings,
        description="How long, and by whom, this rule's workloads may be exempted.",
    )
    warn_before: Duration | None = Field(
        None,
        description="The least notice before a stop (and before a deletion): the warning "
        "(Event, annotations, notifications) comes this long ahead; 0s: no warning. Unset: "
        "policy.warnBefore.",
    )
    snooze: RuleSnoozeSettings = Field(
        default_factory=RuleSnoozeSettings,
        description="What people may ask when they snooze this rule's warnings.",
    )
    delete_after: Duration | None = Field(
        None,
        gt=timedelta(0),
        description="Action `delete` only, and required there: delete the RayCluster once it "
        "has been inactive this long since our own audited deactivation (a cluster someone "
        "else suspended is never deleted).",
    )
    notify: list[str] | None = Field(
        None,
        description="Names of notifications.targets for this rule's workloads when their "
        "namespace names none (`idle-gpu-autoscaler.io/notify`). Unset: "
        "the default rule's, else notifications.defaultTargets.",
        json_schema_extra={"items": {"pattern": TARGET_NAME}, "uniqueItems": True},
    )


# The knobs a `default` rule and `policy:` can both set, as dotted attribute paths: the rule's
# → (the section, the same knob's path in it, the key as written in both).
SHARED_KNOBS = {
    "idle_window": ("policy", "idle_window", "idleWindow"),
    "threshold_percent": ("policy", "threshold_percent", "thresholdPercent"),
    "grace_period": ("policy", "grace_period", "gracePeriod"),
    "max_loading": ("policy", "max_loading", "maxLoading"),
    "not_running_after": ("policy", "not_running_after", "notRunningAfter"),
    "warn_before": ("policy", "warn_before", "warnBefore"),
    "snooze.max_duration": ("policy", "snooze.max_duration", "snooze.maxDuration"),
    "snooze.per_day": ("policy", "snooze.per_day", "snooze.perDay"),
}


def rule_names(settings: Settings) -> list[str]:
    """Each name once; the default rule last and without `match`."""
    return _names(settings.rules)


def impossible_matches(settings: Settings) -> list[str]:
    """A rule's `match` that can never hold (an empty list, a disabled owner kind)."""
    enabled = [kind for kind, table in settings.cluster.owner_kinds.items() if table.enabled]
    return [
        f"rules[{index}].{found.key}: {found.text}"
        for index, rule in enumerate(settings.rules)
        if rule.match is not None
        for found in impossible(rule.match.selector(), enabled_kinds=enabled)
    ]


def rule_spans(settings: Settings) -> list[str]:
    """Each rule's idle window between policy.slot and policy.idleSinceLookback."""
    return [
        line for index, rule in enumerate(settings.rules) for line in _spans(index, rule, settings)
    ]


def default_rule_conflicts(settings: Settings) -> list[str]:
    """A knob of the default rule set both in a rule named `default` and in `policy:`."""
    written = written_default(settings.rules)
    return [] if written is None else _conflicts(len(settings.rules) - 1, written, settings)


def rule_ladders(settings: Settings) -> list[str]:
    """The ladder's last rung: `delete` needs `deleteAfter`, RayClusters only and a warning."""
    return [
        line for index, rule in enumerate(settings.rules) for line in _ladder(index, rule, settings)
    ]


def rule_targets(settings: Settings) -> list[str]:
    """The notification targets each rule names are in notifications.targets."""
    known = set(settings.notifications.targets)
    return [
        line
        for index, rule in enumerate(settings.rules)
        if rule.notify is not None
        for line in target_name_problems(f"rules[{index}].notify", rule.notify, known=known)
    ]


# The checks across keys of the `rules:` list, each with what it reads: one whose input did not
# parse is skipped (settings/problems.py), the others still run and report in the same pass.
RULE_CHECKS = (
    CrossCheck(reads=("rules[*].name", "rules[*].match"), check=rule_names),
    CrossCheck(reads=("rules[*].match", "cluster.ownerKinds"), check=impossible_matches),
    CrossCheck(
        reads=("rules[*].idleWindow", "policy.slot", "policy.idleSinceLookback"),
        check=rule_spans,
    ),
    CrossCheck(
        reads=(
            "rules[*].name",
            *(f"rules[*].{key}" for _, _, key in SHARED_KNOBS.values()),
            *(f"{section}.{key}" for section, _, key in SHARED_KNOBS.values()),
        ),
        check=default_rule_conflicts,
    ),
    CrossCheck(
        reads=(
            "rules[*].name",
            "rules[*].action",
            "rules[*].deleteAfter",
            "rules[*].match.ownerKinds",
            "rules[*].warnBefore",
            "policy.warnBefore",
        ),
        check=rule_ladders,
    ),
    CrossCheck(reads=("rules[*].notify", "notifications.targets"), check=rule_targets),
)


def written_default(rules: Sequence[RuleSettings]) -> RuleSettings | None:
    return rules[-1] if rules and rules[-1].name == DEFAULT_RULE else None


def _names(rules: Sequence[RuleSettings]) -> list[str]:
    problems: list[str] = []
    seen: dict[str, int] = {}
    for index, rule in enumerate(rules):
        key = f"rules[{index}].name"
        if rule.name in seen:
            problems.append(
                f"{key}: {rule.name} is used by an earlier rule (rules[{seen[rule.name]}].name): "
                "give each rule its own name"
            )
        if rule.name == DEFAULT_RULE and index != len(rules) - 1:
            problems.append(f"{key}: the default rule closes the list: write it last")
        if rule.name == DEFAULT_RULE and rule.match is not None:
            problems.append(
                f"rules[{index}].match: the default rule matches everything: remove its match"
            )
        seen.setdefault(rule.name, index)
    return problems


def _spans(index: int, rule: RuleSettings, settings: Settings) -> list[str]:
    window = rule.idle_window
    if window is None:
        return []
    policy, key = settings.policy, f"rules[{index}].idleWindow"
    if window < policy.slot:
        return [
            f"{key}: must not be shorter than policy.slot: at least {format_duration(policy.slot)}"
        ]
    if window > policy.idle_since_lookback:
        lookback = format_duration(policy.idle_since_lookback)
        return [
            f"{key}: must not be longer than policy.idleSinceLookback: at most {lookback}, "
            "or raise policy.idleSinceLookback"
        ]
    return []


def _effective_action(rule: RuleSettings, rules: Sequence[RuleSettings]) -> str:
    """What the rule does: its own action, else the written default rule's, else deactivate."""
    default = written_default(rules)
    inherited = default.action if default is not None else None
    return rule.action or inherited or "deactivate"


def _ladder(index: int, rule: RuleSettings, settings: Settings) -> list[str]:
    key = f"rules[{index}]"
    deletes = _effective_action(rule, settings.rules) == "delete"
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


def _conflicts(index: int, rule: RuleSettings, settings: Settings) -> list[str]:
    problems = []
    for knob, (section, field, key) in SHARED_KNOBS.items():
        owner, _, leaf = f"{section}.{field}".rpartition(".")  # written: in its fields set
        if (
            attrgetter(knob)(rule) is not None
            and leaf in attrgetter(owner)(settings).model_fields_set
        ):
            problems.append(
                f"rules[{index}].{key} and {section}.{key} both set the default rule's {key}: "
                "keep one"
            )
    return problems
