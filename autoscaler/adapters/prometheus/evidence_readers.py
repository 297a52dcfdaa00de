"""The evidence readers `prometheus.evidence` enables, one per signal in the order of
`SIGNALS`: power and Ray by readers of their own, every other device signal against its bar."""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.adapters.prometheus.device_evidence import DeviceEvidenceReader
from autoscaler.adapters.prometheus.evidence_base import EvidenceReader
from autoscaler.adapters.prometheus.power_evidence import PowerEvidenceReader
from autoscaler.adapters.prometheus.ray import RayReader
from autoscaler.domain.usage.evidence import SIGNALS, Signal
from autoscaler.settings.evidence import EvidenceSettings
from autoscaler.settings.prometheus import SignalSettings


def evidence_readers(
    settings: EvidenceSettings, *, compute: Sequence[SignalSettings]
) -> list[EvidenceReader]:
    """One reader per enabled signal; `compute` (`prometheus.signals`) tells the power
    baseline which GPUs were idle."""
    return [reader(signal, settings, compute) for signal in SIGNALS if settings.reads(signal)]


def reader(
    signal: Signal, settings: EvidenceSettings, compute: Sequence[SignalSettings]
) -> EvidenceReader:
    if signal is Signal.POWER:
        return PowerEvidenceReader(settings.power, compute)
    if signal is Signal.RAY:
        return RayReader(settings.ray)
    return DeviceEvidenceReader(signal, settings.device(signal).metric, settings.bar(signal))
