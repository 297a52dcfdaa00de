"""The `policy:` section of the settings tree: the default rule (what idle means, how long,
how much notice) and the service-wide bounds (namespaces, protected classes, caps, dry run).

`autoscaler.settings.tree.Settings` mounts `PolicySettings` as `policy:`; `settings/rules.py`
turns it into the default rule.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, JsonValue, model_validator

from autoscaler.domain.text import LABEL_PATTERN, SUBDOMAIN_PATTERN
from autoscaler.settings.base import Duration, Section
from autoscaler.settings.snooze import SnoozeSettings

# The chart's schema also wants these to be Kubernetes names, each once (settings/base.py).
NAMESPACE_NAMES: dict[str, JsonValue] = {
    "items": {"pattern": LABEL_PATTERN, "maxLength": 63},
    "uniqueItems": True,
}
PRIORITY_CLASS_NAMES: dict[str, JsonValue] = {
    "items": {"pattern": SUBDOMAIN_PATTERN, "maxLength": 253},
    "uniqueItems": True,
}


class NamespaceSettings(Section):
    include: list[str] = Field(
        default_factory=list,
        description="Only these namespaces; empty means all.",
        json_schema_extra=NAMESPACE_NAMES,
    )
    exclude: list[str] = Field(
        default_factory=list,
        description="Never these namespaces, whatever `include` says.",
        json_schema_extra=NAMESPACE_NAMES,
    )


class ViaKueueSettings(Section):
    priority_boost: int = Field(
        -2_000_000_000,
        ge=-(2**31),
        le=-1,
        description="Rules with `reclaim: via-kueue` (docs/RECLAIM.md): the value written to "
        "a due Workload's kueue.x-k8s.io/priority-boost annotation, so Kueue (gate "
        "PriorityBoost) sees it at this much below its priority and preempts it first for a "
        "waiter whose priority is higher. Kueue reads an int32 and adds it to the priority "
        "in 64 bits; Kubernetes' highest user priority is 1000000000, so the default puts a "
        "marked Workload of any user priority below every waiter above -1000000000.",
    )


class PolicySettings(Section):
    threshold_percent: float = Field(
        5,
        ge=0,
        lt=100,
        description="A GPU at or below this utilization (percent) is idle. "
        "5 tolerates monitoring noise while any real job is far above it.",
    )
    idle_window: Duration = Field(
        timedelta(minutes=60),
        description="How long every GPU of a workload must stay idle before it is "
        "deactivated. An hour survives a coffee break or a slow data load; shorter windows stop "
        "people mid-thought.",
    )
    grace_period: Duration = Field(
        timedelta(minutes=15),
        description="No action this long after admission or reactivation: pods start, "
        "weights load.",
    )
    min_coverage: float = Field(
        0.8,
        gt=0,
        le=1,
        description="Share of the window's slots that must hold a real sample (0 to 1); less "
        "is unknown, never idle.",
    )
    slot: Duration = Field(
        timedelta(minutes=1),
        description="Resolution of coverage and of `idle since`. One minute fits the usual "
        "15-30 s scrape.",
    )
    stale_after: Duration = Field(
        timedelta(minutes=3),
        le=timedelta(minutes=5),
        description="A GPU whose newest sample is older is stale "
        "(unknown). Three minutes outlasts a few missed scrapes; at most 5m, Prometheus' "
        "lookback, beyond which the newest sample is invisible anyway.",
    )
    max_loading: Duration = Field(
        timedelta(minutes=60),
        description="Loading (framebuffer growing, data arriving, power over the idle draw, "
        "at near-zero compute) counts as activity for at most this long after compute "
        "stopped or admission; past it, the workload is judged on compute alone.",
    )
    not_running_after: Duration = Field(
        timedelta(minutes=30),
        gt=timedelta(0),
        description="Quota held without work (docs/SIGNALS.md, not-running): a Workload "
        "admitted this long, counted from its latest admission or reactivation as its "
        "conditions say, while none of its GPU pods runs (image not pulled, crash loop, "
        "container config error, unschedulable, no pod created) is due for the rule's action. "
        "30 minutes outlasts a slow image pull or a node scale-up; the quota is as lost to the "
        "next job as idle GPUs are.",
    )
    idle_since_lookback: Duration = Field(
        timedelta(hours=6),
        description="How far back to look for a GPU's last busy sample when reporting "
        "`idle since`. It sets the cost of the heaviest query; at least the idle window.",
    )
    protected_priority_classes: list[str] = Field(
        default_factory=list,
        description="Workloads of these Kueue (Workload)PriorityClasses are never touched "
        "(e.g. [prod-priority]).",
        json_schema_extra=PRIORITY_CLASS_NAMES,
    )
    namespaces: NamespaceSettings = Field(
        default_factory=NamespaceSettings, description="Which namespaces the service acts in."
    )
    max_deactivations_per_cycle: int = Field(
        5,
        ge=0,
        description="At most this many deactivations per cycle (count): a cap that bounds the "
        "harm of a wrong signal in one cycle. The rest wait, and the API says so.",
    )
    max_deactivations_per_hour: int = Field(
        20,
        ge=0,
        description="At most this many deactivations by the loop in any hour (count), counted "
        "from the durable audit records in the runtime-state ConfigMap, so a restart does not "
        "reset it; the rest wait, shown as deferred. Twenty "
        "frees a busy cluster's idle GPUs within a morning while bounding a wrong signal "
        "that outlasts the breaker. Keep api.auditRecordLimit well above it.",
    )

    warn_before: Duration = Field(
        timedelta(minutes=15),
        description="The default rule's least notice before a stop (docs/NOTIFICATIONS.md): "
        "the warning (an Event, the annotations idle-gpu-autoscaler.io/warned-at and "
        "stop-planned-at, the notifications) comes this long ahead, and the stop never sooner: "
        "the times are read back from the annotations, so a restart or a missed cycle never "
        "shortens the notice. 15 minutes lets a person answer a message; 0s turns the warning "
        "off (the stop comes as soon as the workload is due).",
    )
    snooze: SnoozeSettings = Field(
        default_factory=SnoozeSettings,
        description="What people may ask when they snooze a warning (REST, CLI, a link, or "
        "the annotation idle-gpu-autoscaler.io/snoozed-until). A rule may set its own "
        "(`snooze:` in a rule).",
    )

    @model_validator(mode="after")
    def _spans_fit_the_window(self) -> PolicySettings:
        if self.idle_since_lookback < self.idle_window:
            raise ValueError(
                "idleSinceLookback: must be at least idleWindow: raise it or shorten idleWindow"
            )
        if self.slot > self.idle_window:
            raise ValueError(
                "slot: must not be longer than idleWindow: shorten it or lengthen idleWindow"
            )
        return self

    via_kueue: ViaKueueSettings = Field(
        default_factory=ViaKueueSettings,
        description="How rules with `reclaim: via-kueue` mark a workload for Kueue's own "
        "preemption (docs/RECLAIM.md).",
    )
    dry_run: bool = Field(
        True,
        description="Decide and report, patch nothing. On by default so an admin "
        "sees the decisions first; set it to false when they look right.",
    )
