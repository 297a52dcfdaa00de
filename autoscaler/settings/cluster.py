"""The `cluster:` section of the settings tree: how to reach the API server, which owner kinds
and resources count, and where the service keeps its state.

`autoscaler.settings.tree.Settings` mounts `ClusterSettings` as `cluster:`.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from autoscaler.domain.policy.owners import OWNER_KINDS
from autoscaler.settings.base import Duration, Section


class OwnerKindSettings(Section):
    enabled: bool = Field(description="Deactivate Workloads owned by this kind.")
    pod_selector: str | None = Field(
        None,
        description="Label selector of the owner's pods; `{name}` is the owner's name. Unset: "
        "the kind's own way (docs/WORKLOADS.md): its selector, its pods' ownerReferences, or "
        "Kueue's pod group. Set, it overrides that way; a kind the service does not know "
        "needs one.",
        json_schema_extra={"minLength": 1},
    )

    @model_serializer(mode="wrap")
    def _unset_selector_left_out(self, handler: SerializerFunctionWrapHandler) -> Any:
        """An unset podSelector is left out, as a config leaves it out (never `null`)."""
        dumped = handler(self)
        return {key: value for key, value in dumped.items() if value is not None}


class KueueConfigurationSettings(Section):
    """Where Kueue keeps its Configuration (the manager's `--config` file, mounted from a
    ConfigMap): read, never written, for its `waitForPodsReady` and `featureGates`."""

    namespace: str = Field(
        "kueue-system",
        description="Namespace of Kueue's manager (the chart grants list and watch on the "
        "ConfigMap there, by name).",
        json_schema_extra={"minLength": 1},
    )
    name: str = Field(
        "kueue-manager-config",
        description="ConfigMap holding Kueue's Configuration under the key "
        "`controller_manager_config.yaml`. Unreadable (refused, absent): Kueue's "
        "waitForPodsReady deadline is reported unknown, and its workloads are still left to "
        "Kueue.",
        json_schema_extra={"minLength": 1},
    )


def _default_owner_kinds() -> dict[str, OwnerKindSettings]:
    """Each owner kind of the domain's table, as its row says (`domain/policy/owners.py`); only
    RayCluster is enabled, and the description of `owner_kinds` says why."""
    return {
        row.kind: OwnerKindSettings(enabled=row.enabled, pod_selector=row.pod_selector or None)
        for row in OWNER_KINDS
    }


def _owner_kinds_text() -> str:
    """The description of `cluster.ownerKinds`, from the table: what each kind's stop means."""
    enabled = ", ".join(row.kind for row in OWNER_KINDS if row.enabled)
    requeues = ", ".join(row.kind for row in OWNER_KINDS if not row.stop_lasts)
    return (
        "Owner kind of a Workload → whether it is acted on, and how its pods are found "
        "(docs/WORKLOADS.md). Only enabled kinds are acted on; by default "
        f"{enabled}. Deactivating a RayCluster suspends it and Kueue keeps it queued for "
        "later; the job kinds are opt-in because a stop restarts the job (a RayJob's "
        "RayCluster is deleted, it reruns from scratch), the other kinds because the service "
        f"did not act on them before. A stop of {requeues} is a requeue, not a lasting stop: "
        "it yields its GPUs to the queue and comes back when quota is free."
    )


class ClusterSettings(Section):
    kubeconfig: Path | None = Field(
        None,
        description="Kubeconfig path; in a pod, the in-cluster configuration when unset.",
    )
    context: str | None = Field(None, description="Kubeconfig context; the current one when unset.")
    owner_kinds: dict[str, OwnerKindSettings] = Field(
        default_factory=_default_owner_kinds,
        description=_owner_kinds_text(),
        json_schema_extra={"propertyNames": {"pattern": "^[A-Z][A-Za-z0-9]*$"}},
    )
    gpu_resources: list[str] = Field(
        default_factory=lambda: ["nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*"],
        description="Resource names that make a pod a GPU pod; a trailing * matches a prefix "
        "(MIG profiles, for one).",
        json_schema_extra={"items": {"minLength": 1}, "minItems": 1, "uniqueItems": True},
    )
    service_namespace: str = Field(
        "idle-gpu-autoscaler",
        description="Namespace of the service: its runtime-state ConfigMap and Lease are there.",
    )
    runtime_state_config_map: str = Field(
        "idle-gpu-autoscaler-state",
        description="ConfigMap (in serviceNamespace) with pauses, snoozes, contested marks "
        "and the audit; the chart never renders it, so an upgrade cannot erase them.",
    )
    request_timeout: Duration = Field(
        timedelta(seconds=10), description="Kubernetes API request timeout."
    )
    kueue_configuration: KueueConfigurationSettings = Field(
        default_factory=KueueConfigurationSettings,
        description="Kueue's Configuration, read for its waitForPodsReady timeout (the "
        "not-running class reports Kueue's own deadline) and its feature gates.",
    )
