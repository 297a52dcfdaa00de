"""Evidence signals: what besides compute utilization says a workload is in use (ISSUE 16).

Utilization signals (GR_ENGINE_ACTIVE, GPU_UTIL) are judged as a group in `idleness.py`.
Evidence signals count only where present: activity seen by one makes a workload busy or
loading, its absence says nothing either way, and a signal whose query failed makes the
workloads it covers unknown (never idle).

- Device signals are read per GPU, keyed like utilization (`GpuKey`): each slot's samples
  reduced by the signal's `SlotForm`, kept where they reach its bar. A device-level signal
  (one value for the whole board) is never evidence for a MIG instance or for a GPU several
  pods share; a signal read per MIG instance (framebuffer) is evidence for its own only.
- Ray signals are read per pod: tasks executing count as use (busy); live actors and an
  attached driver are only shown (`notes`), never use: an idle notebook keeps its driver.

The values here are the adapter's finished reading of one cycle: activity already compared
with its bar (a rise, a rate, power over the model's idle baseline), so the domain only
weighs times and attribution.

`SIGNALS` is the table of the signals, one row each, that every part reads: the Prometheus
adapter (its readers, and the PromQL of each `SlotForm`), the simulation, the backtest and
docs/SIGNALS.md (whose table is generated from it). A new device signal is a `Signal` member
and its row here, and its settings section in `settings/evidence.py`, named as the signal,
holding `enabled`, `metric` and the field the row's `bar` names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from autoscaler.domain.durations import format_duration
from autoscaler.domain.usage.gpus import GpuKey

MIB_PER_GIB = 1024


class Signal(StrEnum):
    """The evidence signals, by what they tell (`SIGNALS` says the rest)."""

    FRAMEBUFFER = "framebuffer"
    POWER = "power"
    PCIE = "pcie"
    NVLINK = "nvlink"
    RAY = "ray"

    @property
    def row(self) -> EvidenceSignal:
        return SIGNALS[self]

    @property
    def means_use(self) -> bool:
        return self.row.means_use

    @property
    def device_level(self) -> bool:
        return self.row.device_level


class SlotForm(StrEnum):
    """How one slot's samples of a device field become the slot's value, the same in the live
    read, the simulation and the backtest (the adapter writes each as PromQL)."""

    GROWTH = "the newest sample minus the newest one a slot earlier"  # a gauge's rise
    MEAN = "the slot's mean"


class Words(Protocol):
    """A sighting's detail from its active slots' values (oldest first), the span they cover
    and, for a signal over a baseline, the GPU model's idle draw (None when unknown)."""

    def __call__(
        self, values: Sequence[float], *, over: timedelta, baseline: float | None
    ) -> str: ...


@dataclass(frozen=True)
class DemoField:
    """How the demo's A100 reports a field its profile does not script: `idle` at 0 %
    compute, rising by `rise` up to 100 %."""

    idle: float
    rise: float = 0.0

    def at(self, pct: float) -> float:
        return self.idle + self.rise * pct / 100


@dataclass(frozen=True)
class EvidenceSignal:
    """One evidence signal: what it tells, how it is read, weighed and worded."""

    tells: str  # what its activity means, for people (docs/SIGNALS.md)
    form: SlotForm | None = None  # None: read per pod by a reader of its own (Ray)
    bar: str = ""  # the field of its settings section holding the bar, in the form's unit
    over_baseline: bool = False  # the bar is a margin over the GPU model's idle draw
    device_level: bool = False  # one value for the board: no evidence for MIG or a sharer
    means_use: bool = False  # activity is use (busy); otherwise loading
    covers: frozenset[str] | None = None  # owner kinds its failure makes unknown; None: all
    says: Words | None = None  # a sighting's detail: live read, fresh check, demo
    replay_says: Words | None = None  # the backtest's own words for it (pinned by its tests)
    demo: DemoField | None = None  # None: the demo's A100 exports it only where scripted


# How a sighting reads: the live read's, the fresh check's and the demo's words.
def framebuffer_growth(values: Sequence[float], *, over: timedelta, baseline: float | None) -> str:
    """The rises of the active slots add up to the growth over them."""
    span = format_duration(over, units="hms", split="never")
    return f"framebuffer grew {sum(values) / MIB_PER_GIB:.1f} GiB over {span}"


def power_draw(values: Sequence[float], *, over: timedelta, baseline: float | None) -> str:
    idle = "" if baseline is None else f", idle baseline {baseline:.0f} W"
    return f"power {values[-1]:.0f} W{idle}"


def receiving(link: str) -> Words:
    def words(values: Sequence[float], *, over: timedelta, baseline: float | None) -> str:
        rate = values[-1]
        if rate >= 1e9:
            return f"{link} receiving {rate / 1e9:.1f} GB/s"
        return f"{link} receiving {rate / 1e6:.0f} MB/s"

    return words


# The backtest's words, older than the live read's and kept as they are.
def framebuffer_rose(values: Sequence[float], *, over: timedelta, baseline: float | None) -> str:
    return f"framebuffer rose {sum(values) / MIB_PER_GIB:.1f} GiB"


def power_over(values: Sequence[float], *, over: timedelta, baseline: float | None) -> str:
    return f"power {max(values):.0f} W > baseline {baseline or 0.0:.0f} W"


def receive(link: str) -> Words:
    def words(values: Sequence[float], *, over: timedelta, baseline: float | None) -> str:
        return f"{link} receive {max(values) / 1e6:.0f} MB/s"

    return words


# Series shapes and units: dcgm-exporter etc/default-counters.csv and dcp-metrics-included.csv.
# The demo's A100-SXM4-80GB: a process holding its CUDA context and a model keeps its
# framebuffer flat (the level says nothing, only a rise does); it draws about 60 W with a
# context and nothing running, up to its 400 W board limit; it receives kilobytes a second
# over PCIe when idle, a training step's input batches at a few hundred MB/s.
SIGNALS: Mapping[Signal, EvidenceSignal] = {
    Signal.FRAMEBUFFER: EvidenceSignal(
        "framebuffer memory rising: weights or data being loaded",
        form=SlotForm.GROWTH,
        bar="min_rise_mib",
        says=framebuffer_growth,
        replay_says=framebuffer_rose,
        demo=DemoField(idle=16 * MIB_PER_GIB),
    ),  # exported per MIG instance (dcgm-exporter issue #317): its own instance's evidence
    Signal.POWER: EvidenceSignal(
        "drawing above the GPU model's idle baseline",
        form=SlotForm.MEAN,
        bar="margin_watts",
        over_baseline=True,
        device_level=True,  # repeated on every MIG instance (dcgm-exporter issue #257)
        says=power_draw,
        replay_says=power_over,
        demo=DemoField(idle=60.0, rise=400.0 - 60.0),
    ),
    Signal.PCIE: EvidenceSignal(
        "receiving over PCIe: host to device copies",
        form=SlotForm.MEAN,
        bar="min_bytes_per_second",
        device_level=True,
        says=receiving("PCIe"),
        replay_says=receive("PCIe"),
        demo=DemoField(idle=20e3, rise=600e6),
    ),
    Signal.NVLINK: EvidenceSignal(
        "receiving over NVLink: peer copies",
        form=SlotForm.MEAN,
        bar="min_bytes_per_second",
        device_level=True,
        says=receiving("NVLink"),
        replay_says=receive("NVLink"),
    ),
    Signal.RAY: EvidenceSignal(
        "Ray tasks executing in the cluster's pods",
        means_use=True,
        covers=frozenset({"RayCluster", "RayJob"}),
    ),
}

# The signals read per GPU, in the table's order (the order they are read in).
DEVICE_SIGNALS = tuple(signal for signal, row in SIGNALS.items() if row.form is not None)


def detail(
    signal: Signal, values: Sequence[float], *, over: timedelta, baseline: float | None = None
) -> str:
    """A device sighting's words, from its active slots' values over `over`."""
    return _words(signal, signal.row.says)(values, over=over, baseline=baseline)


def replayed_detail(
    signal: Signal, values: Sequence[float], *, over: timedelta, baseline: float | None = None
) -> str:
    """The backtest's words for the same."""
    return _words(signal, signal.row.replay_says)(values, over=over, baseline=baseline)


def _words(signal: Signal, words: Words | None) -> Words:
    if words is None:
        raise ValueError(f"{signal} is no device signal: its reader words its sightings")
    return words


@dataclass(frozen=True)
class Sighting:
    """Activity one signal saw for one GPU (or, for Ray, one pod) within the read's reach."""

    signal: Signal
    last_at: datetime  # the end of the latest slot with activity
    first_at: datetime  # the end of the earliest slot with activity in the reach
    detail: str  # for people, e.g. "framebuffer grew 18.0 GiB over 20m", "power 212 W, ..."

    @property
    def device_level(self) -> bool:
        """One value for the whole board: not evidence for a MIG instance or a sharer."""
        return self.signal.device_level


@dataclass(frozen=True)
class FleetEvidence:
    """One cycle's evidence for the whole fleet; every usage view of the cycle shares it."""

    gpus: Mapping[GpuKey, tuple[Sighting, ...]] = field(default_factory=dict)
    pods: Mapping[tuple[str, str], tuple[Sighting, ...]] = field(default_factory=dict)
    # Shown, never counted as use: "2 actors alive", "driver attached" (namespace, pod).
    notes: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    # A configured signal whose query failed or timed out: why. It makes every workload it
    # covers unknown (`EvidenceSignal.covers`).
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


def quantile(phi: float, values: Iterable[float]) -> float:
    """PromQL's `quantile`: linear interpolation between the closest ranks (the learned
    power baseline, outside Prometheus)."""
    ordered = sorted(values)
    rank = phi * (len(ordered) - 1)
    below = int(rank)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (rank - below)
