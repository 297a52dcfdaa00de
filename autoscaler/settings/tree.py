"""One frozen settings tree, read from one YAML file (`serve --config PATH`).

Every field says its unit and why its default. Keys are camelCase in YAML, like the Helm
values they are rendered from. Secrets and URLs can be overridden from the environment
(see `ENVIRONMENT_OVERRIDES`), so a chart can mount them without templating the file.
The fields' descriptions are the only copy of the settings text: docs/CONFIG.md,
config/example.yaml and the chart schema's `config` part are drawn from them (`reference/`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from autoscaler.core.documents import DocumentRefused, FileRefused, read_yaml_file
from autoscaler.core.errors import ConfigError
from autoscaler.settings.actuators import ActuatorSettings, check_actuators
from autoscaler.settings.api import ApiSettings
from autoscaler.settings.base import Duration, Section
from autoscaler.settings.cluster import ClusterSettings, OwnerKindSettings
from autoscaler.settings.guards import GuardSettings
from autoscaler.settings.ha import LeaderElectionSettings, WatchCacheSettings
from autoscaler.settings.keda import KedaSettings
from autoscaler.settings.notifications import NotificationSettings, check_notifications
from autoscaler.settings.policy import PolicySettings
from autoscaler.settings.problems import CrossCheck, path_order, validated, with_source
from autoscaler.settings.prometheus import PrometheusSettings, SignalSettings
from autoscaler.settings.queries import QuerySettings
from autoscaler.settings.rule_settings import RULE_CHECKS, RuleSettings

__all__ = [
    "ClusterSettings",
    "Duration",
    "OwnerKindSettings",
    "PolicySettings",
    "PrometheusSettings",
    "QuerySettings",
    "RuleSettings",
    "Settings",
    "SignalSettings",
    "load_settings",
]


# Rules a file may hold: enough for a rule per namespace of a large cluster, and few enough
# that comparing each with every earlier one (shadowed rules) stays under a second.
MAX_RULES = 1000


class LoopSettings(Section):
    interval: Duration = Field(
        timedelta(seconds=60),
        description="Time between reconcile cycles. A minute matches the slot; faster buys "
        "nothing against a 60-minute window.",
    )


class LoggingSettings(Section):
    format: Literal["text", "json"] = Field(
        "text", description="text for terminals, json for log collectors (the chart's choice)."
    )
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="The least severe level logged."
    )


class Settings(Section):
    """The whole configuration file."""

    prometheus: PrometheusSettings = Field(
        default_factory=PrometheusSettings,
        description="Where the GPU metrics are (Prometheus or Thanos Querier) and how to read "
        "them: utilization signals, evidence signals, recorded series.",
    )
    policy: PolicySettings = Field(
        default_factory=PolicySettings,
        description="The default rule (what idle means, how long, how much notice) and the "
        "service-wide bounds: namespaces, protected priority classes, caps, dry run.",
    )
    cluster: ClusterSettings = Field(
        default_factory=ClusterSettings,
        description="The Kubernetes side: how to reach the API server, which owners and "
        "resources count, where the service keeps its state.",
    )
    actuators: ActuatorSettings = Field(
        default_factory=ActuatorSettings,
        description="How idle GPUs are freed, per what manages the workload (docs/ACTUATORS.md). "
        "A RayCluster that a Kueue Workload admits, or that carries any kueue.x-k8s.io/ label, "
        "is always Kueue's (only its Workload is deactivated, whatever is enabled here); one "
        "controlled by a RayJob or an AppWrapper is never suspended on its own. At least one "
        "actuator must be enabled.",
    )
    loop: LoopSettings = Field(default_factory=LoopSettings, description="The reconcile loop.")
    logging: LoggingSettings = Field(
        default_factory=LoggingSettings, description="The service's log, on standard error."
    )
    api: ApiSettings = Field(
        default_factory=ApiSettings,
        description="The REST API (exemptions, pauses, audit), /healthz, /readyz, /metrics and "
        "KEDA's metrics-api endpoint, all on one port (docs/API.md).",
    )
    leader_election: LeaderElectionSettings = Field(
        default_factory=LeaderElectionSettings,
        description="One acting replica among several, elected through a coordination.k8s.io/v1 "
        "Lease (needs get, create and update on Leases).",
    )
    watch_cache: WatchCacheSettings = Field(
        default_factory=WatchCacheSettings,
        description="Watch caches of the objects each cycle reads.",
    )
    keda: KedaSettings = Field(
        default_factory=KedaSettings,
        description="The idle signal for KEDA (docs/KEDA.md): an external scaler (gRPC) and a "
        "metrics-api endpoint, so a ScaledObject can scale on it.",
    )
    guards: GuardSettings = Field(
        default_factory=GuardSettings,
        description="Guards against doing harm, after the policy has decided. Their state "
        "(breaker, contested marks) lives in the runtime-state ConfigMap (docs/API.md).",
    )
    notifications: NotificationSettings = Field(
        default_factory=NotificationSettings,
        description="Where warnings, all-clears and idle-but-held notices go "
        "(docs/NOTIFICATIONS.md). Without targets the Kubernetes Event (always written) is the "
        "only notice. Targets are named here only: a namespace's annotation or label "
        "idle-gpu-autoscaler.io/notify (a comma list of these names, or `none` for Events "
        "only) picks them, else the rule's `notify`, else defaultTargets; nobody who can "
        "annotate a namespace can make the service post to an address of their choosing.",
    )
    rules: list[RuleSettings] = Field(
        default_factory=list,
        max_length=MAX_RULES,
        description="Scoped rules, first match wins; the default rule (`policy:`) closes the "
        "list (docs/RULES.md). Each sets any of the default rule's knobs for what it matches; "
        f"an unset knob inherits the default rule's. At most {MAX_RULES}: check-config compares "
        "each rule with every earlier one.",
        examples=[
            [
                {
                    "name": "sandbox",
                    "match": {"namespaces": ["sandbox"], "ownerKinds": ["RayCluster"]},
                    "action": "delete",
                    "deleteAfter": "3d",
                    "warnBefore": "1h",
                    "snooze": {"maxDuration": "8h", "perDay": 2},
                    "notify": ["ml-slack"],
                },
                {"name": "research", "match": {"namespaces": ["research"]}, "action": "warn"},
            ]
        ],
    )


PROMETHEUS_URL_VARIABLE = "IGA_PROMETHEUS_URL"  # the CLI's hints name it (client/next_steps.py)
# How a person reaches an in-cluster Prometheus from a laptop, as the hints and help name it.
PROMETHEUS_FORWARD = "kubectl port-forward -n monitoring svc/prometheus-operated 9090"
ENVIRONMENT_OVERRIDES: dict[str, tuple[str, ...]] = {
    PROMETHEUS_URL_VARIABLE: ("prometheus", "url"),
    "IGA_PROMETHEUS_TOKEN_FILE": ("prometheus", "bearerTokenFile"),
    "IGA_PROMETHEUS_CA_FILE": ("prometheus", "caFile"),
    "IGA_KUBECONFIG": ("cluster", "kubeconfig"),
    "POD_NAMESPACE": ("cluster", "serviceNamespace"),
}


# Keys removed at 1.0 → what to write instead: a file that still has one is refused saying so.
REMOVED_KEYS = {
    "api.maxExemption": "exemptions.maxDuration in a rule named default, last in `rules:`",
    "keda.profiles": "a rule per profile, of the same name, with its idleWindow and "
    "thresholdPercent: a KEDA trigger that names the rule in `profile:` is judged with them",
}


# Every check across keys, each with what it reads (settings/problems.py): all run in the pass
# that reads the file, but a check whose input did not parse.
CROSS_CHECKS: tuple[CrossCheck, ...] = (
    *RULE_CHECKS,
    CrossCheck(reads=("notifications",), check=lambda s: check_notifications(s.notifications)),
    CrossCheck(reads=("actuators", "cluster.ownerKinds"), check=check_actuators),
)


def load_settings(path: Path | None, *, environ: Mapping[str, str] | None = None) -> Settings:
    """Read, override from the environment, validate. Raises ConfigError naming every bad key
    at once, sorted by path: the values that do not parse and the checks across keys."""
    raw = _read_yaml(path) if path is not None else {}
    from_environment: dict[str, str] = {}
    for variable, keys in ENVIRONMENT_OVERRIDES.items():
        value = (os.environ if environ is None else environ).get(variable)
        if value:
            _set_nested(raw, keys, value)
            from_environment[".".join(keys)] = variable
    checked = validated(Settings, raw, removed=REMOVED_KEYS)
    problems = list(checked.problems)
    if checked.tree is not None:
        problems += [
            line
            for cross in CROSS_CHECKS
            if cross.runs_on(checked.left_out)
            for line in cross.check(checked.tree)
        ]
    if problems or checked.tree is None:
        lines = [with_source(line, from_environment) for line in problems]
        raise ConfigError(sorted(lines, key=path_order))
    return checked.tree


def _read_yaml(path: Path) -> dict[str, Any]:
    """The file's sections, read within the bounds of `core.documents`."""
    loaded = read_yaml_file(path)
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        refused = DocumentRefused(
            "the top level must be a mapping of sections",
            "start each section at the left margin, e.g. `policy:`",
        )
        raise FileRefused(path, refused)
    return loaded


def _set_nested(raw: dict[str, Any], keys: tuple[str, ...], value: str) -> None:
    """Sets `value` at `keys`. A section written empty (YAML null, e.g. `prometheus:` then only
    comments) is an empty mapping, as it always was; one written as a scalar or a list is left
    as written, for its own error to name it."""
    node = raw
    for key in keys[:-1]:
        if node.get(key) is None:
            node[key] = {}
        child = node[key]
        if not isinstance(child, dict):
            return
        node = child
    node[keys[-1]] = value
