"""Evidence signals: what besides compute utilization says a workload is in use (ISSUE 16).

Utilization signals (GR_ENGINE_ACTIVE, GPU_UTIL) are judged as a group in `idleness.py`.
Evidence signals count only where present: activity seen by one makes a workload busy or
loading, its absence says nothing either way, and a signal whose query failed makes the
workloads it covers unknown (never idle).

- Device signals (framebuffer, power, PCIe and NVLink receive) are read per GPU, keyed like
  utilization (`GpuKey`). A device-level signal (power, PCIe, NVLink: one value for the whole
  board) is never evidence for a MIG instance or for a GPU several pods share; a signal read
  per MIG instance (framebuffer) is evidence for its own instance only.
- Ray signals are read per pod: tasks executing count as use (busy); live actors and an
  attached driver are only shown (`notes`), never use: an idle notebook keeps its driver.

The values here are the adapter's finished reading of one cycle: activity already compared
with its bar (a rise, a rate, power over the model's idle baseline), so the domain only
weighs times and attribution.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from autoscaler.domain.durations import format_duration
from autoscaler.domain.usage.gpus import GpuKey


class Signal(StrEnum):
    """The evidence signals, by what they tell."""

    FRAMEBUFFER = "framebuffer"  # framebuffer memory rising: weights or data being loaded
    POWER = "power"  # drawing above the model's idle baseline
    PCIE = "pcie"  # receiving over PCIe (host to device copies)
    NVLINK = "nvlink"  # receiving over NVLink (peer copies)
    RAY = "ray"  # Ray tasks executing in the cluster's pods

    @property
    def means_use(self) -> bool:
        """Ray task execution is use (busy); device activity at near-zero compute is loading."""
        return self is Signal.RAY


@dataclass(frozen=True)
class Sighting:
    """Activity one signal saw for one GPU (or, for Ray, one pod) within the read's reach."""

    signal: Signal
    last_at: datetime  # the end of the latest slot with activity
    first_at: datetime  # the end of the earliest slot with activity in the reach
    detail: str  # for people, e.g. "framebuffer rose 18.0 GiB", "power 212 W > baseline 61 W"
    device_level: bool = False  # one value for the whole board: not evidence for MIG or shared


@dataclass(frozen=True)
class FleetEvidence:
    """One cycle's evidence for the whole fleet; every usage view of the cycle shares it."""

    gpus: Mapping[GpuKey, tuple[Sighting, ...]] = field(default_factory=dict)
    pods: Mapping[tuple[str, str], tuple[Sighting, ...]] = field(default_factory=dict)
    # Shown, never counted as use: "2 actors alive", "driver attached" (namespace, pod).
    notes: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    # A configured signal whose query failed or timed out: why. It makes every workload it
    # covers unknown (device signals: every GPU workload; Ray: workloads with Ray pods).
    failures: Mapping[Signal, str] = field(default_factory=dict)
    # Learned or configured idle power per dcgm-exporter modelName, watts, for display.
    power_baselines: Mapping[str, float] = field(default_factory=dict)

    def for_gpu(self, key: GpuKey) -> tuple[Sighting, ...]:
        return self.gpus.get(key, ())

    def for_pod(self, namespace: str, pod: str) -> tuple[Sighting, ...]:
        return self.pods.get((namespace, pod), ())

    def notes_for(self, namespace: str, pod: str) -> tuple[str, ...]:
        return self.notes.get((namespace, pod), ())


NO_EVIDENCE = FleetEvidence()

MIB_PER_GIB = 1024


# How a sighting's detail reads, the same from the live read and from the simulation.
def framebuffer_growth(mib: float, *, over: timedelta) -> str:
    span = format_duration(over, units="hms", split="never")
    return f"framebuffer grew {mib / MIB_PER_GIB:.1f} GiB over {span}"


def receiving(link: str, bytes_per_second: float) -> str:
    if bytes_per_second >= 1e9:
        return f"{link} receiving {bytes_per_second / 1e9:.1f} GB/s"
    return f"{link} receiving {bytes_per_second / 1e6:.0f} MB/s"


def power_draw(watts: float, *, baseline: float | None) -> str:
    idle = "" if baseline is None else f", idle baseline {baseline:.0f} W"
    return f"power {watts:.0f} W{idle}"


def quantile(phi: float, values: Iterable[float]) -> float:
    """PromQL's `quantile`: linear interpolation between the closest ranks (the learned
    power baseline, outside Prometheus)."""
    ordered = sorted(values)
    rank = phi * (len(ordered) - 1)
    below = int(rank)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (rank - below)
