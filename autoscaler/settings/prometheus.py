"""The `prometheus:` section of the settings tree: where the GPU metrics are and how to read them.

`autoscaler.settings.tree.Settings` mounts `PrometheusSettings` as `prometheus:`; the section
conventions (frozen, camelCase, unknown keys rejected, durations) come from
`autoscaler.settings.base`.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

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
        "https://thanos-querier.openshift-monitoring.svc:9091 (env IGA_PROMETHEUS_URL).",
    )
    bearer_token_file: Path | None = Field(
        None,
        description="File holding the bearer token; re-read when it changes, because "
        "projected service-account tokens rotate (env IGA_PROMETHEUS_TOKEN_FILE).",
    )
    ca_file: Path | None = Field(
        None,
        description="CA bundle to verify the server; system CAs when unset "
        "(env IGA_PROMETHEUS_CA_FILE).",
    )
    insecure_skip_verify: bool = Field(
        False, description="Skip TLS verification. Off: a token must not go to an unverified peer."
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
        description="Retries of a failed request. One absorbs a blip; more only delays the cycle.",
    )
    tenancy_namespace: str | None = Field(
        None,
        description="Thanos tenancy port 9092 only: dcgm-exporter's own namespace "
        "(e.g. nvidia-gpu-operator), sent as the `namespace` parameter.",
    )
    queries: QuerySettings = Field(default_factory=QuerySettings)
    recorded_series: RecordedSeriesSettings = Field(
        default_factory=RecordedSeriesSettings,
        description="Per-slot peaks recorded by the recording rules of "
        "`idle-gpu-autoscaler recording-rules` (docs/RECORDING-RULES.md), for big fleets.",
    )
    signals: list[SignalSettings] = Field(
        default_factory=_default_signals,
        description="Utilization metrics; a GPU is idle only when every present one is idle.",
    )
    evidence: EvidenceSettings = Field(
        default_factory=EvidenceSettings,
        description="Evidence signals besides utilization: loading and Ray use (ISSUE 16).",
    )
