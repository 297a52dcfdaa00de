"""The `prometheus:` section of the settings tree: where the GPU metrics are and how to read them.

`autoscaler.settings.tree.Settings` mounts `PrometheusSettings` as `prometheus:`; the section
conventions (frozen, camelCase, unknown keys rejected, durations) come from
`autoscaler.settings.base`.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import Field

from autoscaler.settings.base import Duration, Section
from autoscaler.settings.evidence import EvidenceSettings
from autoscaler.settings.queries import QuerySettings
from autoscaler.settings.recorded import RecordedSeriesSettings


class SignalSettings(Section):
    metric: str = Field(description="dcgm-exporter metric name.")
    scale: float = Field(
        gt=0, description="Divide by this to get a 0..1 ratio (100 for percent metrics)."
    )
    valid_on_mig: bool = Field(
        description="False when the metric reads 0 on a MIG instance whatever the load."
    )


def _default_signals() -> list[SignalSettings]:
    return [
        SignalSettings(metric="DCGM_FI_PROF_GR_ENGINE_ACTIVE", scale=1, valid_on_mig=True),
        SignalSettings(metric="DCGM_FI_DEV_GPU_UTIL", scale=100, valid_on_mig=False),
    ]


class PrometheusSettings(Section):
    url: str = Field(
        "http://localhost:9090",
        description="Prometheus or Thanos Querier base URL. OpenShift: "
        "https://thanos-querier.openshift-monitoring.svc:9091.",
    )
    bearer_token_file: Path | None = Field(
        None,
        description="File holding the bearer token (OpenShift: the pod's service-account "
        "token); re-read when it changes, because projected service-account tokens rotate.",
    )
    ca_file: Path | None = Field(
        None,
        description="CA bundle to verify the server (OpenShift: the injected service CA); "
        "system CAs when unset.",
    )
    insecure_skip_verify: bool = Field(
        False,
        description="Skip TLS verification; tests only. Off: a token must not go to an "
        "unverified peer.",
    )
    timeout: Duration = Field(
        timedelta(seconds=10),
        description="Per-request timeout. Well under the loop interval so a slow server "
        "cannot stall a cycle.",
    )
    retries: int = Field(
        1,
        ge=0,
        le=1,
        description="Retries of a failed request (0 or 1). One absorbs a blip; more would "
        "only stretch a failing cycle.",
    )
    tenancy_namespace: str | None = Field(
        None,
        description="Thanos tenancy port 9092 only: dcgm-exporter's own namespace "
        "(e.g. nvidia-gpu-operator), sent as the `namespace` parameter.",
    )
    range_semantics: Literal["auto", "left-open", "left-closed"] = Field(
        "auto",
        description="Whether the server leaves a sample at a range's start out (left-open, "
        "Prometheus 3) or keeps it (left-closed, 2.x); every slot is read (t - slot, t] "
        "either way. auto asks the server once with a probe query; set it when the probe "
        "cannot tell (another engine, a proxy that rewrites queries), which leaves every "
        "read unknown. A fixed value sends no probe.",
    )
    queries: QuerySettings = Field(
        default_factory=QuerySettings,
        description="PromQL templates for the three queries of a fleet read (slots, busy, "
        "newest), each filled in per signal and returning the signal's own unit (no {scale}: "
        "the service divides); unset keeps the built-in ones (adapters/prometheus/promql.py "
        "lists the placeholders). Only for exporters that differ from dcgm-exporter's defaults.",
    )
    recorded_series: RecordedSeriesSettings = Field(
        default_factory=RecordedSeriesSettings,
        description="Per-slot peaks recorded by the recording rules, for big fleets "
        "(docs/RECORDING-RULES.md; the file comes from `idle-gpu-autoscaler recording-rules`, "
        "the chart has recordingRules.enabled). A GPU with holes in its recordings is read raw.",
    )
    signals: list[SignalSettings] = Field(
        default_factory=_default_signals,
        description="Utilization metrics; a GPU is idle only when every one present is at or "
        "below the threshold. DCGM_FI_DEV_GPU_UTIL reads 0 on MIG instances whatever the load, "
        "so it is no evidence there (validOnMig: false).",
    )
    evidence: EvidenceSettings = Field(
        default_factory=EvidenceSettings,
        description="Evidence besides utilization (docs/SIGNALS.md), one fleet-wide query "
        "each. Activity at near-zero compute is loading (framebuffer growing, data arriving, "
        "power above the GPU model's idle draw) and Ray tasks executing are use; a signal whose "
        "series are absent is no evidence either way, and a signal whose query fails makes its "
        "workloads unknown.",
    )
