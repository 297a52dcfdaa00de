"""Which facts are a workload's own: its GPUs' compute and device evidence, its pods' Ray
signals and notes. The rule, with its sources, is in docs/SIGNALS.md.

- A GPU's device evidence is what was seen under its own `GpuKey` (namespace, pod, uuid,
  MIG instance). A device-level sighting (`EvidenceSignal.device_level`: one value for the
  whole board, as power, PCIe and NVLink) is ignored for a MIG instance and for a
  time-shared GPU: it cannot say whose activity it is, and a neighbour's must never keep
  (or stop) this workload.
- A time-shared GPU is one whose (uuid, MIG instance) is also reported, with a recent
  sample, under another pod. Its compute is the device's, so every sharer is judged on the
  busiest series of the device: any sharer's use keeps every sharer busy, and one sharer's
  idle-looking series never stops another that the device says is busy.
- Ray signals are per pod, and any pod of the workload counts (the head pod usually holds
  no GPU). Only task execution (`Signal.means_use`) is use; notes are only shown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from autoscaler.domain.models import FleetUsage, GpuUsage, WorkloadInfo
from autoscaler.domain.usage.assessment import UsageRules, clock, current, known
from autoscaler.domain.usage.evidence import FleetEvidence, Sighting
from autoscaler.domain.usage.gpus import GpuKey


@dataclass(frozen=True)
class Attributed:
    """One workload's share of the cycle's facts."""

    gpus: tuple[GpuUsage, ...]  # compute; a shared GPU's as the device's (busiest sharer)
    loading: tuple[tuple[GpuKey, Sighting], ...] = ()  # usable device sightings, per GPU
    use: tuple[Sighting, ...] = ()  # Ray task execution in any of its pods
    lines: tuple[str, ...] = ()  # the usable sightings' details and the notes, for people

    def loading_of(self, key: GpuKey) -> tuple[Sighting, ...]:
        return tuple(s for k, s in self.loading if k == key)


def attribute(
    workload: WorkloadInfo, usage: FleetUsage, *, rules: UsageRules, now: datetime
) -> Attributed:
    namespace = workload.ref.namespace
    evidence = usage.evidence
    gpus: list[GpuUsage] = []
    loading: list[tuple[GpuKey, Sighting]] = []
    for pod in workload.gpu_pods:
        for gpu in usage.for_pod(namespace, pod.name):
            sharers = shared_with(gpu.key, usage, stale_after=rules.stale_after, now=now)
            gpus.append(as_device(gpu, sharers))
            found = usable(gpu.key, evidence.for_gpu(gpu.key), shared=bool(sharers))
            loading.extend((gpu.key, sighting) for sighting in found)
    use, notes = pod_signals(workload, evidence)
    seen = [s for _, s in loading] + list(use)
    details = [described(s, rules=rules, now=now) for s in seen] + list(notes)
    return Attributed(tuple(gpus), tuple(loading), use, unique(details))


def described(sighting: Sighting, *, rules: UsageRules, now: datetime) -> str:
    """The sighting's detail, with when it was last seen unless that is now: activity from
    earlier in the window must not read as activity going on."""
    if current(sighting, rules=rules, now=now):
        return sighting.detail
    return f"{sighting.detail} (until {clock(sighting.last_at)})"


def shared_with(
    key: GpuKey, usage: FleetUsage, *, stale_after: timedelta, now: datetime
) -> tuple[GpuUsage, ...]:
    """The other pods' series of the same device, still reporting: its time-sharers."""
    device = usage.by_device.get((key.uuid, key.mig_instance), ())
    return tuple(
        gpu
        for gpu in device
        if (gpu.key.namespace, gpu.key.pod) != (key.namespace, key.pod)
        and gpu.last_sample_at is not None
        and now - gpu.last_sample_at <= stale_after
    )


def as_device(gpu: GpuUsage, sharers: Iterable[GpuUsage]) -> GpuUsage:
    """A shared GPU's compute as the device's: the busiest of the sharers' series. Coverage
    and freshness stay this pod's own, so missing data is still this workload's unknown."""
    others = list(sharers)
    if not others or not known(gpu.peak):
        return gpu
    peak = max([gpu.peak, *(g.peak for g in others if known(g.peak))])
    busy = [t for t in (gpu.last_busy_at, *(g.last_busy_at for g in others)) if t is not None]
    return replace(gpu, peak=peak, last_busy_at=max(busy, default=None))


def usable(key: GpuKey, sightings: Iterable[Sighting], *, shared: bool) -> tuple[Sighting, ...]:
    """A device-level sighting is no evidence for a MIG instance or a shared GPU."""
    board_is_ours = key.mig_instance is None and not shared
    return tuple(s for s in sightings if board_is_ours or not s.device_level)


def pod_signals(
    workload: WorkloadInfo, evidence: FleetEvidence
) -> tuple[tuple[Sighting, ...], tuple[str, ...]]:
    """Ray task execution and the shown-only notes of every pod of the workload."""
    pods = [(workload.ref.namespace, pod.name) for pod in workload.pods]
    use = tuple(s for pod in pods for s in evidence.for_pod(*pod) if s.signal.means_use)
    notes = tuple(note for pod in pods for note in evidence.notes_for(*pod))
    return use, notes


def unique(lines: Iterable[str]) -> tuple[str, ...]:
    """Each line once, in the order first seen (every GPU of a node may say the same)."""
    return tuple(dict.fromkeys(lines))
