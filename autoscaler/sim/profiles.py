"""Scripted GPU telemetry for the demo: what a RayCluster's GPUs report at any minute.

A profile starts from a base utilization and is refined by later segments, the last matching
one winning, in minutes from the story's start (negative: before the demo began):

    Profile.busy(85).idle_from(20)                       # trains, then the job stops
    Profile.loading(until=45, pct=2).busy_from(45, 90)   # loads weights slowly, then trains
    Profile.bursty(every=25, busy_for=2).gap(30, 45)     # short bursts; no telemetry for 15 min
    Profile.weight_loading(start=45, minutes=20, gib=60) # framebuffer climbs at 0-2 %, trains
    Profile.half_used(gpus=4, busy=2)                    # GPUs 0-1 train, GPUs 2-3 sit at 0 %

A utilization level is a percentage, NaN (dcgm-exporter's "no value") or `NO_SAMPLE` (the
series is not scraped at all), or a `Burst` alternating busy and idle.

Besides utilization, each GPU reports the device fields the evidence signals read, in
dcgm-exporter's own units (NVIDIA/dcgm-exporter etc/dcp-metrics-included.csv: FB_USED
"Framebuffer memory used (in MiB)", POWER_USAGE "Power draw (in W)", PROF_PCIE_RX_BYTES and
PROF_NVLINK_RX_BYTES "the rate of data received ... in bytes per second", all gauges). A
field left unscripted follows utilization as an A100 does, by its signal's `demo` row in
`SIGNALS`: power from its idle draw up to its board limit, PCIe receiving input batches in
proportion, framebuffer flat; a signal without one (NVLink) is not exported unless scripted
(absence is no evidence). When utilization has no sample (the exporter is down) no field has
one; when it is NaN the derived fields have none either.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from autoscaler.domain.usage.evidence import MIB_PER_GIB, DemoField, Signal

NO_SAMPLE = None
_FOREVER = math.inf


def _demo(signal: Signal) -> DemoField:
    field = signal.row.demo
    if field is None:
        raise ValueError(f"the demo's A100 derives no {signal} (see its row in SIGNALS)")
    return field


# The A100 of the signals' `demo` rows, for the profiles that script its fields.
_POWER, _PCIE = _demo(Signal.POWER), _demo(Signal.PCIE)
IDLE_WATTS = _POWER.idle
IDLE_PCIE_BYTES = _PCIE.idle
BUSY_PCIE_BYTES = _PCIE.rise
HELD_MIB = _demo(Signal.FRAMEBUFFER).idle
CONTEXT_MIB = 512.0  # a CUDA context alone, before any weights
# dcgm-exporter counts protocol headers in the PCIe receive rate (its field description):
# the wire carries more than the payload that lands in the framebuffer.
PCIE_OVERHEAD = 1.25
LOADING_WATTS = 75.0  # copies at 0-2 % compute lift an A100 a little above idle


@dataclass(frozen=True)
class Burst:
    """Busy for `busy_for` minutes at the start of every `every` minutes, idle in between."""

    every: float
    busy_for: float
    busy_pct: float = 95.0
    idle_pct: float = 0.0

    def at(self, minute: float) -> float:
        return self.busy_pct if minute % self.every < self.busy_for else self.idle_pct


@dataclass(frozen=True)
class Ramp:
    """From `low` at minute `since`, rising `per_minute` up to `high` (framebuffer filling)."""

    since: float
    low: float
    per_minute: float
    high: float

    def at(self, minute: float) -> float:
        return min(self.high, self.low + max(0.0, minute - self.since) * self.per_minute)


Level = float | Burst | Ramp | None


@dataclass(frozen=True)
class Segment:
    start: float  # minutes from the story's start, inclusive
    end: float  # exclusive
    level: Level

    def covers(self, minute: float) -> bool:
        return self.start <= minute < self.end


@dataclass(frozen=True)
class Track:
    """One field over time: a base level refined by segments, the last matching one winning."""

    base: Level
    segments: tuple[Segment, ...] = ()

    def level(self, level: Level, *, start: float, end: float = _FOREVER) -> Track:
        return Track(self.base, (*self.segments, Segment(start, end, level)))

    def at(self, minute: float) -> float | None:
        level = self.base
        for segment in reversed(self.segments):
            if segment.covers(minute):
                level = segment.level
                break
        return level.at(minute) if isinstance(level, Burst | Ramp) else level


@dataclass(frozen=True)
class Profile:
    base: Level
    segments: tuple[Segment, ...] = ()
    summary: str = ""  # how the live view and the docs describe it
    fields: tuple[tuple[Signal, Track], ...] = ()  # scripted device fields; others derived
    gpus: tuple[tuple[int, Profile], ...] = ()  # by GPU index in the RayCluster: its own story

    @classmethod
    def busy(cls, pct: float = 85.0) -> Profile:
        return cls(base=pct, summary=f"busy at {pct:g}%")

    @classmethod
    def idle(cls, pct: float = 0.0) -> Profile:
        return cls(base=pct, summary="idle")

    @classmethod
    def unexported(cls) -> Profile:
        """No series at all while its pods run: dcgm-exporter does not cover its node (its
        DaemonSet lacks the node pool's toleration, say): running but not monitored."""
        return cls(base=NO_SAMPLE, summary="runs; its node exports no GPU metrics")

    @classmethod
    def bursty(cls, *, every: float, busy_for: float, pct: float = 95.0) -> Profile:
        return cls(
            base=Burst(every=every, busy_for=busy_for, busy_pct=pct),
            summary=f"bursts of {busy_for:g} min every {every:g} min",
        )

    @classmethod
    def loading(cls, *, until: float, pct: float = 2.0) -> Profile:
        """Reading weights from storage: the GPU barely moves until `until`."""
        return cls(base=pct, summary=f"loads weights at {pct:g}% until minute {until:g}")

    @classmethod
    def weight_loading(
        cls, *, start: float = 0.0, minutes: float = 20.0, gib: float = 60.0, pct: float = 90.0
    ) -> Profile:
        """Idle until `start`, then `gib` GiB of weights land in the framebuffer over
        `minutes` (3 GiB/min by default) at 0-2 % compute, PCIe receiving them, then it
        trains at `pct`."""
        done = start + minutes
        per_minute = gib * MIB_PER_GIB / minutes
        rate = per_minute / 60 * 2**20 * PCIE_OVERHEAD  # bytes/s on the wire
        filling = Ramp(start, CONTEXT_MIB, per_minute, CONTEXT_MIB + gib * MIB_PER_GIB)
        loading = Burst(every=2, busy_for=1, busy_pct=2.0, idle_pct=0.0)  # 0-2 % compute
        return (
            cls(base=0.0)
            .level(loading, start=start, end=done)
            .busy_from(done, pct)
            .field(Signal.FRAMEBUFFER, filling)
            .field(Signal.PCIE, IDLE_PCIE_BYTES)
            .field(Signal.PCIE, rate, start=start, end=done)
            .field(Signal.PCIE, BUSY_PCIE_BYTES * pct / 100, start=done)
            .field(Signal.POWER, IDLE_WATTS)
            .field(Signal.POWER, LOADING_WATTS, start=start, end=done)
            .field(Signal.POWER, _POWER.at(pct), start=done)
            .described(f"loads {gib:g} GiB of weights at 0-2% for {minutes:g} min, then trains")
        )

    @classmethod
    def half_used(cls, *, gpus: int = 4, busy: int = 2, pct: float = 85.0) -> Profile:
        """GPUs 0 to `busy - 1` train at `pct`; the others hold their memory at 0 %."""
        idle = Profile.idle().holding(gib=HELD_MIB / MIB_PER_GIB)
        return (
            cls.busy(pct)
            .on_gpus(range(busy, gpus), idle)
            .described(f"{busy} of {gpus} GPUs busy at {pct:g}%, {gpus - busy} at 0%")
        )

    def described(self, summary: str) -> Profile:
        return Profile(self.base, self.segments, summary, self.fields, self.gpus)

    def level(self, level: Level, *, start: float, end: float = _FOREVER) -> Profile:
        segment = Segment(start, end, level)
        return Profile(self.base, (*self.segments, segment), self.summary, self.fields, self.gpus)

    def idle_from(self, minute: float, pct: float = 0.0) -> Profile:
        return self.level(pct, start=minute)

    def busy_from(self, minute: float, pct: float = 85.0) -> Profile:
        return self.level(pct, start=minute)

    def gap(self, start: float, end: float) -> Profile:
        """No samples in [start, end): the exporter or its scrape was down."""
        return self.level(NO_SAMPLE, start=start, end=end)

    def gaps(self, *, every: float, length: float, first: float, last: float) -> Profile:
        """A telemetry gap of `length` minutes every `every` minutes from `first` to `last`."""
        profile, start = self, first
        while start < last:
            profile = profile.gap(start, start + length)
            start += every
        return profile

    def nan(self, start: float, end: float) -> Profile:
        """NaN samples in [start, end): the exporter could not read the field."""
        return self.level(math.nan, start=start, end=end)

    def field(
        self, signal: Signal, level: Level, *, start: float | None = None, end: float = _FOREVER
    ) -> Profile:
        """Script one device field (in dcgm-exporter's unit); with `start`, from then on."""
        scripted = dict(self.fields)
        track = scripted.get(signal)
        if start is None or track is None:
            track = (
                Track(level) if start is None else Track(None).level(level, start=start, end=end)
            )
        else:
            track = track.level(level, start=start, end=end)
        fields = tuple({**scripted, signal: track}.items())
        return Profile(self.base, self.segments, self.summary, fields, self.gpus)

    def holding(self, *, gib: float) -> Profile:
        """The framebuffer flat at `gib` GiB: a model held in memory, nothing rising."""
        return self.field(Signal.FRAMEBUFFER, gib * MIB_PER_GIB)

    def on_gpus(self, indexes: Iterable[int], profile: Profile) -> Profile:
        """These GPUs of the RayCluster (counted across its pods) follow `profile` instead."""
        gpus = dict(self.gpus) | dict.fromkeys(indexes, profile)
        return Profile(self.base, self.segments, self.summary, self.fields, tuple(gpus.items()))

    def for_gpu(self, index: int) -> Profile:
        """The profile GPU `index` of the RayCluster follows."""
        return dict(self.gpus).get(index, self)

    def percent_at(self, minute: float) -> float | None:
        """Percent at `minute`; NaN for a NaN sample; None when there is no sample."""
        return Track(self.base, self.segments).at(minute)

    def reading(self, signal: Signal, minute: float) -> float | None:
        """A device field at `minute`, in dcgm-exporter's unit; None when there is no sample."""
        pct = self.percent_at(minute)
        if pct is None:
            return None  # the exporter is down: no field at all
        track = _scripted(self.fields).get(signal)
        if track is not None:
            return track.at(minute)
        return None if math.isnan(pct) else _derived(signal, pct)


def _scripted(fields: tuple[tuple[Signal, Track], ...]) -> Mapping[Signal, Track]:
    return dict(fields)


def _derived(signal: Signal, pct: float) -> float | None:
    field = signal.row.demo
    return None if field is None else field.at(pct)  # None: not exported unless scripted
