"""One frozen settings tree, read from one YAML file (`serve --config PATH`).

Every field says its unit and why its default. Keys are camelCase in YAML, like the Helm
values they are rendered from. Secrets and URLs can be overridden from the environment
(see `ENVIRONMENT_OVERRIDES`), so a chart can mount them without templating the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from autoscaler.core.errors import ConfigError
from autoscaler.domain.policy.owners import OWNER_KINDS
from autoscaler.settings.actuator_checks import check_actuators
from autoscaler.settings.actuators import ActuatorSettings
from autoscaler.settings.api import ApiSettings
from autoscaler.settings.base import Duration, Section, format_duration, parse_duration
from autoscaler.settings.guards import GuardSettings
from autoscaler.settings.ha import LeaderElectionSettings, WatchCacheSettings
from autoscaler.settings.keda import KedaSettings
from autoscaler.settings.notice_checks import check_notices
from autoscaler.settings.notice_settings import SnoozeSettings
from autoscaler.settings.notifications import NotificationSettings
from autoscaler.settings.prometheus import PrometheusSettings, SignalSettings
from autoscaler.settings.queries import QuerySettings
from autoscaler.settings.rule_settings import RuleSettings, check_rules

__all__ = [
    "Duration",
    "PrometheusSettings",
    "QuerySettings",
    "RuleSettings",
    "Settings",
    "SignalSettings",
    "format_duration",
    "load_settings",
    "parse_duration",
]


class NamespaceSettings(Section):
    include: list[str] = Field(
        default_factory=list, description="Only these namespaces; empty means all."
    )
    exclude: list[str] = Field(
        default_factory=list, description="Never these namespaces, whatever `include` says."
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
        description="How long every GPU must stay idle. An hour survives a coffee break "
        "or a slow data load; shorter windows stop people mid-thought.",
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
        description="Share of the window's slots that must hold a real "
        "sample; less is unknown, never idle.",
    )
    slot: Duration = Field(
        timedelta(minutes=1),
        description="Coverage and idle-since resolution. One minute fits the usual 15-30 s scrape.",
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
    idle_since_lookback: Duration = Field(
        timedelta(hours=6),
        description="How far back to look for a GPU's last busy sample when reporting "
        "`idle since`. It sets the cost of the heaviest query; at least the idle window.",
    )
    protected_priority_classes: list[str] = Field(
        default_factory=list, description="Workloads of these priority classes are never touched."
    )
    namespaces: NamespaceSettings = Field(default_factory=NamespaceSettings)
    max_deactivations_per_cycle: int = Field(
        5, ge=0, description="A cap that bounds the harm of a wrong signal in one cycle."
    )
    max_deactivations_per_hour: int = Field(
        20,
        ge=0,
        description="At most this many deactivations by the loop in any hour (count), counted "
        "from the durable audit records so a restart does not reset it; the rest wait. Twenty "
        "frees a busy cluster's idle GPUs within a morning while bounding a wrong signal "
        "that outlasts the breaker. Keep api.auditRecordLimit well above it.",
    )

    warn_before: Duration = Field(
        timedelta(minutes=15),
        description="The default rule's least notice before a stop: the warning (Event, "
        "annotations, notifications) comes this long ahead, and the stop never sooner however "
        "the service restarts. 15 minutes lets a person answer a message; 0s: no warning.",
    )
    snooze: SnoozeSettings = Field(default_factory=SnoozeSettings)

    @model_validator(mode="after")
    def _spans_fit_the_window(self) -> PolicySettings:
        if self.idle_since_lookback < self.idle_window:
            raise ValueError("idleSinceLookback must be at least idleWindow")
        if self.slot > self.idle_window:
            raise ValueError("slot must not be longer than idleWindow")
        return self

    dry_run: bool = Field(
        True,
        description="Decide and report, patch nothing. On by default so an admin "
        "sees the decisions first.",
    )


class OwnerKindSettings(Section):
    enabled: bool = Field(description="Deactivate Workloads owned by this kind.")
    pod_selector: str = Field(
        description="Label selector of the owner's pods; `{name}` is the owner's name."
    )


def _default_owner_kinds() -> dict[str, OwnerKindSettings]:
    """Each owner kind of the domain's table, as its row says (`domain/policy/owners.py`)."""
    return {
        row.kind: OwnerKindSettings(enabled=row.enabled, pod_selector=row.pod_selector)
        for row in OWNER_KINDS
    }


class ClusterSettings(Section):
    kubeconfig: Path | None = Field(
        None, description="Kubeconfig path; in-cluster config when unset and running in a pod."
    )
    context: str | None = Field(None, description="Kubeconfig context; the current one when unset.")
    owner_kinds: dict[str, OwnerKindSettings] = Field(
        default_factory=_default_owner_kinds,
        description="Owner kind → pod selector; only `enabled` kinds are acted on.",
    )
    gpu_resources: list[str] = Field(
        default_factory=lambda: ["nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*"],
        description="Resource names (trailing * is a prefix) that make a pod a GPU pod.",
    )
    service_namespace: str = Field(
        "idle-gpu-autoscaler", description="Namespace of the service (env POD_NAMESPACE)."
    )
    runtime_state_config_map: str = Field(
        "idle-gpu-autoscaler-state",
        description="ConfigMap with pauses and audit; the chart never renders it.",
    )
    request_timeout: Duration = Field(
        timedelta(seconds=10), description="Kubernetes API request timeout."
    )


class LoopSettings(Section):
    interval: Duration = Field(
        timedelta(seconds=60),
        description="Time between cycles. A minute matches the slot; faster buys nothing "
        "against a 60-minute window.",
    )


class LoggingSettings(Section):
    format: Literal["text", "json"] = Field("text", description="json for log collectors.")
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO")


class Settings(Section):
    """The whole configuration file."""

    prometheus: PrometheusSettings = Field(default_factory=PrometheusSettings)
    policy: PolicySettings = Field(default_factory=PolicySettings)
    cluster: ClusterSettings = Field(default_factory=ClusterSettings)
    actuators: ActuatorSettings = Field(default_factory=ActuatorSettings)
    loop: LoopSettings = Field(default_factory=LoopSettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    leader_election: LeaderElectionSettings = Field(default_factory=LeaderElectionSettings)
    watch_cache: WatchCacheSettings = Field(default_factory=WatchCacheSettings)
    keda: KedaSettings = Field(default_factory=KedaSettings)
    guards: GuardSettings = Field(default_factory=GuardSettings)
    notifications: NotificationSettings = Field(default_factory=NotificationSettings)
    rules: list[RuleSettings] = Field(
        default_factory=list,
        description="Scoped rules, first match wins; the default rule (`policy:`) closes the "
        "list. See docs/RULES.md.",
    )


ENVIRONMENT_OVERRIDES: dict[str, tuple[str, ...]] = {
    "IGA_PROMETHEUS_URL": ("prometheus", "url"),
    "IGA_PROMETHEUS_TOKEN_FILE": ("prometheus", "bearerTokenFile"),
    "IGA_PROMETHEUS_CA_FILE": ("prometheus", "caFile"),
    "IGA_KUBECONFIG": ("cluster", "kubeconfig"),
    "POD_NAMESPACE": ("cluster", "serviceNamespace"),
}


def load_settings(path: Path | None, *, environ: Mapping[str, str] | None = None) -> Settings:
    """Read, override from the environment, validate. Raises ConfigError naming each bad key."""
    raw = _read_yaml(path) if path is not None else {}
    for variable, keys in ENVIRONMENT_OVERRIDES.items():
        value = (os.environ if environ is None else environ).get(variable)
        if value:
            _set_nested(raw, keys, value)
    try:
        settings = Settings.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError([_describe(error) for error in exc.errors()]) from exc
    # Across sections: the rules, policy, api, keda, cluster; the notices and their targets;
    # the actuators and the owner kinds their rows have.
    problems = check_rules(settings) + check_notices(settings) + check_actuators(settings)
    if problems:
        raise ConfigError(problems)
    return settings


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror}"]) from exc
    except yaml.YAMLError as exc:
        raise ConfigError([f"{path}: not valid YAML: {exc}"]) from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError([f"{path}: the top level must be a mapping of sections"])
    return loaded


def _set_nested(raw: dict[str, Any], keys: tuple[str, ...], value: str) -> None:
    node = raw
    for key in keys[:-1]:
        child = node.get(key)
        node[key] = child if isinstance(child, dict) else {}
        node = node[key]
    node[keys[-1]] = value


def _describe(error: Mapping[str, Any]) -> str:
    location = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"{location}: unknown key (check its spelling)"
    return f"{location}: {error['msg']}"
