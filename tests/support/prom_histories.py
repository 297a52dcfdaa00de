"""Every history the session's one Prometheus is backfilled with, one area of tests each.

Backfilling a running Prometheus restarts it and leaves a 5-10 s gap in live data, so the
session fixture (tests/conftest.py) writes every history once, in one promtool run, before it
starts the server. The adapter and the backtest read the whole fleet, so namespaces cannot keep
the areas apart: each area owns twelve hours of its own, ending at its anchor
(`anchor(began, area)`), and keeps its history and its reads inside them. The twelve hours
before the session began are left to live data (the e2e looks back minutes, `serve` six hours).
"""

from __future__ import annotations

import enum
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.sim.metrics import GpuHolding
from autoscaler.sim.pods import gpu_uuid
from autoscaler.sim.profiles import Profile as SimProfile
from tests.support.evidence_histories import device_evidence_series
from tests.support.owner_histories import (
    INFO_HELP,
    UNOWNED_END,
    InfoSeries,
    owned_story,
    unowned_story,
    write_info,
)
from tests.support.prom import (
    GPU_UTIL,
    Burst,
    ExporterPod,
    Gpu,
    GpuSeries,
    LabelStyle,
    Mig,
    Profile,
    Replacement,
    block_duration_for,
    create_blocks,
    fleet,
    write_openmetrics,
)
from tests.support.prom.dcgm import FB_USED, GR_ENGINE_ACTIVE, HELP

M, H = 60, 3600
SLICE_S = 12 * H  # longer than any area's history plus the reach of its reads


class Area(enum.IntEnum):
    """Whose twelve hours: area n's end n x 12 h before the session began (the twelve hours
    just before it are live data's)."""

    PROM_RIG = 1
    PROMETHEUS_ADAPTER = 2
    ONE_GPU = 3  # the adapter's fleet of one, for the query count
    BACKTEST = 4
    SIM_EXPORTER = 5
    DEVICE_EVIDENCE = 6  # framebuffer, power, PCIe and NVLink series (ISSUE 16)
    BACKTEST_OWNERS = 7  # kube-state-metrics' owner series beside the GPUs' (ISSUE 30)
    SLOT_BOUNDARIES = 8  # samples exactly on slot boundaries, read left-open (issue 32)


def anchor(began: int, area: Area) -> int:
    """Where `area`'s history ends (`began` is a whole minute, so is every anchor)."""
    return began - area * SLICE_S


@dataclass(frozen=True)
class Backfill:
    series: Sequence[GpuSeries]
    start: int
    end: int
    step_s: int = 15
    info: Sequence[InfoSeries] = ()  # kube-state-metrics series, 1 at each step


# -- tests/test_prom_rig.py: one scenario per pod, in namespace `hist`, up to a minute before

RIG_POD_A = ExporterPod(pod="nvidia-dcgm-exporter-aaaaa", ip="10.128.2.15")
RIG_POD_B = ExporterPod(pod="nvidia-dcgm-exporter-bbbbb", ip="10.128.2.16")
RIG_POD_H = ExporterPod(pod="nvidia-dcgm-exporter-hhhhh", ip="10.128.2.17")


def prom_rig(now: int) -> list[Backfill]:
    def on(pod: str, **gpu: Any) -> Gpu:
        return Gpu(namespace="hist", pod=pod, node=f"node-{pod}", **gpu)

    mig = Profile.busy(70)
    series = [
        on("busy-then-idle").history(Profile.busy(80).idle_from(now - H)),
        on("gap").history(Profile.busy(50).gap(now - 2 * H, now - H)),
        on("nan").history(Profile.busy(40).nan(now - 30 * M, now - 20 * M)),
        on("bursty").history(Profile(base=Burst(period_s=300, busy_s=60, busy_pct=95))),
        on("replaced").history(
            Profile.busy(60), exporter=RIG_POD_A, replaced=(Replacement(now - H, RIG_POD_B),)
        ),
        on("mig-1", mig=Mig(1)).history(mig),
        Gpu(namespace="hist", pod="mig-2", node="node-mig-1", mig=Mig(2)).history(mig),
        on("honor").history(Profile.busy(10), style=LabelStyle.HONOR_LABELS),
        Gpu(node="free-node").history(Profile.idle()),
    ]
    return [Backfill(series, start=now - 3 * H, end=now - 60)]


# -- tests/adapters/test_prometheus_adapter.py: one case per namespace, pod `worker-0`

ADAPTER_EXPORTER = ExporterPod(pod="nvidia-dcgm-exporter-aaaaa", ip="10.128.2.15")
SAME_IP = ExporterPod(pod="nvidia-dcgm-exporter-bbbbb", ip="10.128.2.15")  # hostNetwork reuse
NEW_IP = ExporterPod(pod="nvidia-dcgm-exporter-ccccc", ip="10.128.2.99")


def worker(namespace: str, **gpu: Any) -> Gpu:
    return Gpu(namespace=namespace, pod="worker-0", node=f"node-{namespace}", **gpu)


def prometheus_adapter(end: int) -> list[Backfill]:
    """The cases every 15 s up to `end`, and a hundred idle GPUs scraped every 30 s."""
    late_burst = Burst(period_s=600, busy_s=20, epoch=end + 30)  # busy between two slot ends
    cases = [
        worker("idle").history(Profile.idle(1)),
        worker("busy").history(Profile.busy(85)),
        worker("recently-busy").history(Profile.busy(90).idle_from(end - 20 * M)),
        worker("busy-70m-ago").history(Profile.busy(90).idle_from(end - 70 * M)),
        worker("busy-2h-ago").history(Profile.busy(90).idle_from(end - 2 * H)),
        worker("burst").history(Profile.idle().bursty_from(end - 30 * M, late_burst)),
        worker("gap").history(Profile.idle().gap(end - 40 * M, end - 20 * M)),
        worker("nan").history(Profile.idle().nan(end - 2 * H, end + 1)),
        worker("nan-lately").history(Profile.idle().nan(end - 30 * M, end + 1)),
        worker("quiet-4m").history(Profile.idle().gap(end - 4 * M, end + 1)),
        worker("stale").history(Profile.idle().gap(end - 10 * M, end + 1)),
        worker("split-same-ip").history(
            Profile.idle(3).idle_from(end - 30 * M, 1),
            exporter=ADAPTER_EXPORTER,
            replaced=(Replacement(end - 30 * M, SAME_IP),),
        ),
        worker("split-new-ip").history(
            Profile.idle(2),
            exporter=ADAPTER_EXPORTER,
            replaced=(Replacement(end - 30 * M, NEW_IP),),
        ),
        worker("mig", mig=Mig(1)).history(Profile.busy(70)),
        worker("mig-util-only", mig=Mig(2)).history(Profile.busy(70), metrics=(GPU_UTIL,)),
        worker("util-only").history(Profile.busy(40), metrics=(GPU_UTIL,)),
        worker("honor").history(Profile.idle(2), style=LabelStyle.HONOR_LABELS),
        worker("two-gpus", index=0).history(Profile.idle()),
        worker("two-gpus", index=1).history(Profile.busy(60)),
    ]
    hundred = fleet(workloads=100, gpus_per_workload=1, default=Profile.idle())
    return [
        Backfill(cases, start=end - 3 * H, end=end),
        Backfill(hundred, start=end - 2 * H, end=end, step_s=30),
    ]


def one_gpu(end: int) -> list[Backfill]:
    return [Backfill([worker("alone").history(Profile.idle())], start=end - H, end=end)]


# -- tests/backtest/test_backtest_prometheus.py: one story per namespace, see its docstring


def backtest_stories(end: int) -> list[Backfill]:
    """Samples every 60 s at 7 s past the minute, for the nine hours up to `end`."""
    idle, back, sparse, gap = end - 4 * H, end - 5 * H, end - 5 * H, end - 5 * H

    def gpu(namespace: str, pod: str, node: str, index: int = 0) -> Gpu:
        return Gpu(namespace=namespace, pod=pod, node=node, index=index)

    went_idle = Profile.busy(80).idle_from(idle)
    came_back = Profile.busy(80).idle_from(back).busy_from(back + 90 * M)
    series = [
        gpu("idle", "idle-rc-head-abcde", "n1").history(went_idle),
        gpu("idle", "idle-rc-gpu-group-worker-fghij", "n2").history(went_idle),
        gpu("regret", "back-rc-small-group-worker-klmno", "n3", 0).history(came_back),
        gpu("regret", "back-rc-small-group-worker-klmno", "n3", 1).history(came_back),
        gpu("sparse", "sparse-rc-head-uvwxy", "n5").history(
            Profile.busy(70).idle_from(sparse).gap(sparse + 10 * M, sparse + 40 * M)
        ),
        gpu("gap", "gappy-rc-head-pqrst", "n4").history(Profile.busy(70).gap(gap, gap + 150 * M)),
        gpu("other", "notebook-0", "n6").history(Profile.idle()),
    ]
    return [Backfill(series, start=end - 9 * H + 7, end=end, step_s=60), backtest_loading(end)]


# tests/backtest/test_backtest_evidence_prometheus.py: weights loaded at 1 % compute, long
# before the stories above (their reads start at end - 8 h 01 m at most)
LOADING_IDLE = 11 * H  # compute drops to 1 % at end - LOADING_IDLE
LOADING_CLIMB = LOADING_IDLE - 10 * M  # the framebuffer climbs 1 GiB a minute for 20 min from here
GIB = 1024  # MiB


def backtest_loading(end: int) -> Backfill:
    """dcgm-exporter's FB_USED (MiB, its default counters CSV) at 1 GiB until the climb, one GiB
    more each minute for 20 minutes, then held flat at 21 GiB."""
    climb = end - LOADING_CLIMB
    framebuffer = Profile.idle(GIB)
    for minute in range(20):
        start = climb + minute * M
        framebuffer = framebuffer.level((2 + minute) * GIB, start=start, end=start + M)
    framebuffer = framebuffer.level(21 * GIB, start=climb + 20 * M)
    gpu = Gpu(namespace="loading", pod="loading-rc-head-abcde", node="n7")
    compute = Profile.busy(80).idle_from(end - LOADING_IDLE, 1)
    series = [gpu.history(compute), gpu.history(framebuffer, metrics=(FB_USED,))]
    return Backfill(series, start=end - 11 * H - 30 * M + 7, end=end - 9 * H - 30 * M, step_s=60)


# -- tests/sim/test_sim_metrics.py: the simulated exporter's cases, one pod each in `sim`

SIM_MINUTES = 180  # the history's length; the test reads at its end
SIM_CASES: dict[str, tuple[SimProfile, float, float | None]] = {
    # pod: (profile, pod start minute, pod end minute)
    "busy-then-idle": (SimProfile.busy(80).idle_from(120), 0, None),
    "bursty": (SimProfile.bursty(every=25, busy_for=3), 0, None),
    "gap": (SimProfile.busy(70).gap(150, 165), 0, None),
    "loading": (SimProfile.loading(until=170, pct=2).busy_from(170, 90), 0, None),
    "nan-newest": (SimProfile.busy(60).nan(175, 200), 0, None),
    "nan-middle": (SimProfile.busy(50).nan(130, 140).idle_from(140), 0, None),
    "young": (SimProfile.idle(), 150, None),
    "deleted": (SimProfile.busy(85), 0, 170),
    "low": (SimProfile.idle(3), 0, None),
}


def sim_origin(end: int) -> datetime:
    """Minute 0 of the simulated profiles, SIM_MINUTES before `end`."""
    return datetime.fromtimestamp(end, UTC) - timedelta(minutes=SIM_MINUTES)


def sim_holdings(origin: datetime) -> list[GpuHolding]:
    """Each case's pod holding one GPU from its start minute to its end minute."""
    return [
        GpuHolding(
            key=GpuKey("sim", pod, gpu_uuid(f"node-{pod}", 0)),
            raycluster=pod,
            node=f"node-{pod}",
            start=origin + timedelta(minutes=start),
            end=None if end is None else origin + timedelta(minutes=end),
        )
        for pod, (_, start, end) in SIM_CASES.items()
    ]


class SimSamples:
    """A case's profile and pod lifetime, seen as the rig's per-second utilization."""

    def __init__(self, held: GpuHolding, profile: SimProfile, origin: datetime) -> None:
        self._held, self._profile, self._origin = held, profile, origin.timestamp()

    def utilization(self, t: float) -> float | None:
        if not self._held.holds_at(int(t)):
            return None
        return self._profile.percent_at((t - self._origin) / 60)


def sim_exporter(end: int) -> list[Backfill]:
    """Scraped at :07 and :37 past each minute, as the simulated exporter samples."""
    origin = sim_origin(end)
    series = [
        Gpu(namespace="sim", pod=h.key.pod, node=h.node, uuid=h.key.uuid).history(
            SimSamples(h, SIM_CASES[h.key.pod][0], origin),  # type: ignore[arg-type]
            metrics=(GPU_UTIL,),
        )
        for h in sim_holdings(origin)
    ]
    return [Backfill(series, start=int(origin.timestamp()) + 7, end=end, step_s=30)]


def device_evidence(end: int) -> list[Backfill]:
    return [Backfill(device_evidence_series(end), start=end - 2 * H, end=end)]


def backtest_owners(end: int) -> list[Backfill]:
    """tests/support/owner_histories.py: with owners over the last five hours, without them
    from eleven to seven hours before the end."""
    gpus, info = owned_story(end)
    unowned = [
        Gpu(namespace=namespace, pod=pod, node=node).history(Profile.idle())
        for namespace, pod, node in unowned_story()
    ]
    return [
        Backfill(gpus, start=end - 5 * H + 7, end=end, step_s=60, info=info),
        Backfill(unowned, start=end - 11 * H + 7, end=end - UNOWNED_END, step_s=60),
    ]


# -- tests/adapters/test_left_open_ranges.py: samples exactly on slot boundaries


def slot_boundaries(end: int) -> list[Backfill]:
    """Engine activity every minute on the minute up to `end`, so every sample sits on a slot
    boundary: 1 % but for one 90 % sample at the hour's window start (`bound-peak`) or half an
    hour before `end` (`bound-last-busy`), or with no samples in the 13 minutes after the one
    at `end` - 20 min (`bound-coverage`)."""

    def lone_busy(at: int) -> Profile:
        return Profile.idle(1).level(90.0, start=at, end=at + 1)

    series = [
        worker("bound-peak").history(lone_busy(end - H), metrics=(GR_ENGINE_ACTIVE,)),
        worker("bound-last-busy").history(lone_busy(end - 30 * M), metrics=(GR_ENGINE_ACTIVE,)),
        worker("bound-coverage").history(
            Profile.idle(1).gap(end - 20 * M + 1, end - 6 * M), metrics=(GR_ENGINE_ACTIVE,)
        ),
    ]
    return [Backfill(series, start=end - 3 * H, end=end, step_s=60)]


AREAS = {
    Area.PROM_RIG: prom_rig,
    Area.PROMETHEUS_ADAPTER: prometheus_adapter,
    Area.ONE_GPU: one_gpu,
    Area.BACKTEST: backtest_stories,
    Area.SIM_EXPORTER: sim_exporter,
    Area.DEVICE_EVIDENCE: device_evidence,
    Area.BACKTEST_OWNERS: backtest_owners,
    Area.SLOT_BOUNDARIES: slot_boundaries,
}


def session_backfills(began: int) -> list[Backfill]:
    return [part for area, build in AREAS.items() for part in build(anchor(began, area))]


# -- writing them --------------------------------------------------------------------------


def backfill(parts: Sequence[Backfill], data_dir: Path, *, promtool: Path) -> None:
    """Turn every part into blocks in one promtool run (each run costs ~0.25 s on its own)."""
    with tempfile.TemporaryDirectory(prefix="om-", dir=data_dir.parent) as scratch:
        merged = Path(scratch) / "histories.om"
        _write_merged(parts, merged, scratch=Path(scratch))
        duration = block_duration_for(min(p.start for p in parts), max(p.end for p in parts))
        create_blocks(merged, data_dir, promtool=promtool, max_block_duration=duration)


def _write_merged(parts: Sequence[Backfill], path: Path, *, scratch: Path) -> None:
    """One file for parts with their own spans and steps: OpenMetrics allows each family once,
    so each part's share of a family is written on its own and appended under one header."""
    metrics = sorted({metric for p in parts for s in p.series for metric in s.metrics})
    piece = scratch / "piece.om"
    with path.open("w", encoding="utf-8") as out:
        for metric in metrics:
            out.write(f"# HELP {metric} {HELP[metric]}\n# TYPE {metric} gauge\n")
            for part in parts:
                only = [replace(s, metrics=(metric,)) for s in part.series if metric in s.metrics]
                write_openmetrics(only, piece, start=part.start, end=part.end, step_s=part.step_s)
                with piece.open(encoding="utf-8") as lines:
                    out.writelines(line for line in lines if not line.startswith("#"))
        _write_info(parts, out)
        out.write("# EOF\n")


def _write_info(parts: Sequence[Backfill], out: Any) -> None:
    """Each info family once, every part's series of it under one header."""
    for metric in sorted({one.metric for p in parts for one in p.info}):
        out.write(f"# HELP {metric} {INFO_HELP[metric]}\n# TYPE {metric} gauge\n")
        for part in parts:
            lines: list[str] = []
            series = [one for one in part.info if one.metric == metric]
            write_info(series, lines, times=range(part.start, part.end + 1, part.step_s))
            out.writelines(lines)
