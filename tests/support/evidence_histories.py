"""Device evidence histories (ISSUE 16) for tests/adapters/test_device_evidence.py: one case
per namespace, pod `worker-0`, two hours every 15 s up to the area's anchor.

Each shape is what dcgm-exporter publishes (units from its etc/default-counters.csv and
etc/dcp-metrics-included.csv): FB_USED in MiB, POWER_USAGE in W, PCIe/NVLink receive in
bytes per second. A MIG board's instances carry GPU_I_ID; the framebuffer is per instance
(dcgm-exporter issue #317), the power the board's, repeated on every instance (issue #257).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.support.prom import Burst, Gpu, GpuSeries, LabelStyle, Mig, Profile
from tests.support.prom.dcgm import ALL_METRICS, FB_USED, NVLINK_RX, PCIE_RX, POWER_USAGE

M, H = 60, 3600
GIB = 1024  # MiB
L4 = "NVIDIA L4"
FREE_GPUS = 8  # unallocated, compute idle: the A100s the power baseline is learned from


@dataclass(frozen=True)
class Ramp:
    """A gauge at `base` until `since`, then rising `per_minute` (a history's shape)."""

    base: float
    since: float
    per_minute: float

    def utilization(self, t: float) -> float:
        return self.base + max(0.0, t - self.since) / 60 * self.per_minute


# 0-2 % compute: a process copying weights in, its kernels few and short.
NEAR_ZERO = Profile(base=Burst(period_s=60, busy_s=30, busy_pct=2, idle_pct=0))


def case(namespace: str, **gpu: Any) -> Gpu:
    return Gpu(namespace=namespace, pod="worker-0", node=f"node-{namespace}", **gpu)


def with_compute(
    gpu: Gpu, compute: Profile, evidence: dict[str, Any], **kw: Any
) -> list[GpuSeries]:
    """The GPU's utilization series, and one series per evidence gauge with its shape."""
    found = [gpu.history(compute, metrics=ALL_METRICS, **kw)]
    found += [gpu.history(shape, metrics=(metric,), **kw) for metric, shape in evidence.items()]
    return found


def device_evidence_series(end: int) -> list[GpuSeries]:
    climbing = Ramp(base=1 * GIB, since=end - 20 * M, per_minute=3 * GIB)
    board = Profile.idle(180)  # the MIG board's draw, on both instances' series
    series = [
        *with_compute(case("loading"), NEAR_ZERO, {FB_USED: climbing}),
        *with_compute(
            case("loading-honor"), NEAR_ZERO, {FB_USED: climbing}, style=LabelStyle.HONOR_LABELS
        ),
        *with_compute(case("held"), Profile.idle(), {FB_USED: Profile.idle(60 * GIB)}),
        *with_compute(
            Gpu(namespace="mig-quiet", pod="worker-0", node="node-mig", mig=Mig(1)),
            Profile.idle(),
            {FB_USED: Profile.idle(2 * GIB), POWER_USAGE: board},
        ),
        *with_compute(
            Gpu(namespace="mig-loading", pod="worker-0", node="node-mig", mig=Mig(2)),
            NEAR_ZERO,
            {FB_USED: climbing, POWER_USAGE: board},
        ),
        *with_compute(
            case("copying"),
            Profile.idle(),
            {PCIE_RX: Profile.idle(1e4).busy_from(end - 10 * M, 2.5e9)},
        ),
        *with_compute(
            case("peer"), Profile.idle(), {NVLINK_RX: Profile.idle(0).busy_from(end - 5 * M, 8e9)}
        ),
        *with_compute(case("drawing"), NEAR_ZERO, {POWER_USAGE: Profile.idle(212)}),
        *with_compute(case("warm"), Profile.idle(), {POWER_USAGE: Profile.idle(75)}),
        *with_compute(case("l4", model=L4), Profile.busy(90), {POWER_USAGE: Profile.idle(70)}),
    ]
    for index in range(FREE_GPUS):
        free = Gpu(node="evidence-spare-node", index=index)  # not the rig's free-node
        series += with_compute(free, Profile.idle(), {POWER_USAGE: Profile.idle(58 + index)})
    return series
