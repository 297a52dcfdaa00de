"""The evidence readers `prometheus.evidence` enables, in the order they are read."""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.adapters.prometheus.device_evidence import (
    DeviceEvidenceReader,
    framebuffer_detail,
    receive_detail,
)
from autoscaler.adapters.prometheus.evidence_base import EvidenceReader
from autoscaler.adapters.prometheus.power_evidence import PowerEvidenceReader
from autoscaler.adapters.prometheus.ray import RayReader
from autoscaler.domain.usage.evidence import Signal
from autoscaler.settings.evidence import EvidenceSettings
from autoscaler.settings.prometheus import SignalSettings


def evidence_readers(
    settings: EvidenceSettings, *, compute: Sequence[SignalSettings]
) -> list[EvidenceReader]:
    """One reader per enabled signal (Ray's last); `compute` (`prometheus.signals`) tells the
    power baseline which GPUs were idle."""
    readers: list[EvidenceReader] = []
    if settings.framebuffer.enabled:
        readers.append(
            DeviceEvidenceReader(
                Signal.FRAMEBUFFER,
                settings.framebuffer.metric,
                settings.framebuffer.min_rise_mib,
                framebuffer_detail,
            )
        )
    if settings.power.enabled:
        readers.append(PowerEvidenceReader(settings.power, compute))
    for signal, link, transfer in (
        (Signal.PCIE, "PCIe", settings.pcie),
        (Signal.NVLINK, "NVLink", settings.nvlink),
    ):
        if transfer.enabled:
            readers.append(
                DeviceEvidenceReader(
                    signal, transfer.metric, transfer.min_bytes_per_second, receive_detail(link)
                )
            )
    if settings.ray.enabled:
        readers.append(RayReader(settings.ray))
    return readers
