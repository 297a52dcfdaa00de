"""dcgm-exporter series as they look in Prometheus, and as the exporter itself exposes them.

dcgm-exporter prints, per GPU (or MIG instance): gpu, UUID, pci_bus_id, device, modelName,
GPU_I_PROFILE + GPU_I_ID on MIG instances, Hostname, DCGM_FI_DRIVER_VERSION, and - when a pod holds
the GPU - that pod's namespace/pod/container. MIG instances repeat the parent GPU's UUID.

Behind a ServiceMonitor with honorLabels false, Prometheus attaches the exporter pod's own target
labels (namespace, pod, container, service, endpoint, instance, job) and renames the clashing
workload labels to exported_namespace/exported_pod/exported_container. `LabelStyle.HONOR_LABELS` is
the other setup seen in clusters: the workload's labels win and the hostname label is lowercase.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass, field

from .profiles import Profile

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
ALL_METRICS = (GPU_UTIL, GR_ENGINE_ACTIVE)
# Evidence gauges (ISSUE 16), in dcgm-exporter's units (etc/default-counters.csv,
# etc/dcp-metrics-included.csv): a history's level is the metric's own value, not a percent.
FB_USED = "DCGM_FI_DEV_FB_USED"  # MiB
POWER_USAGE = "DCGM_FI_DEV_POWER_USAGE"  # W
PCIE_RX = "DCGM_FI_PROF_PCIE_RX_BYTES"  # bytes/s
NVLINK_RX = "DCGM_FI_PROF_NVLINK_RX_BYTES"  # bytes/s
RAW_METRICS = (FB_USED, POWER_USAGE, PCIE_RX, NVLINK_RX)
HELP = {
    GPU_UTIL: "GPU utilization (in %).",
    GR_ENGINE_ACTIVE: "Ratio of time the graphics engine is active.",
    FB_USED: "Framebuffer memory used (in MiB).",
    POWER_USAGE: "Power draw (in W).",
    PCIE_RX: "The rate of data received over the PCIe bus, in bytes per second.",
    NVLINK_RX: "The rate of data received over NVLink, in bytes per second.",
}

EXPORTER_NAMESPACE = "nvidia-gpu-operator"
EXPORTER_SERVICE = "nvidia-dcgm-exporter"
EXPORTER_CONTAINER = "nvidia-dcgm-exporter"
EXPORTER_ENDPOINT = "gpu-metrics"
EXPORTER_PORT = 9400
A100 = "NVIDIA A100-SXM4-80GB"


class LabelStyle(enum.Enum):
    SERVICE_MONITOR = "service-monitor"  # honorLabels false: exported_* + Hostname
    HONOR_LABELS = "honor-labels"  # workload namespace/pod/container kept + hostname


@dataclass(frozen=True)
class Mig:
    instance_id: int
    profile: str = "1g.10gb"


@dataclass(frozen=True)
class ExporterPod:
    """The dcgm-exporter DaemonSet pod that scraped the GPU (its labels become target labels)."""

    pod: str = "nvidia-dcgm-exporter-abcde"
    ip: str = "10.128.2.15"
    namespace: str = EXPORTER_NAMESPACE

    def target_labels(self) -> dict[str, str]:
        return {
            "namespace": self.namespace,
            "pod": self.pod,
            "container": EXPORTER_CONTAINER,
            "service": EXPORTER_SERVICE,
            "endpoint": EXPORTER_ENDPOINT,
            "instance": f"{self.ip}:{EXPORTER_PORT}",
            "job": EXPORTER_SERVICE,
        }


def gpu_uuid(node: str, index: int) -> str:
    """A stable UUID shaped like dcgm-exporter's (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)."""
    digest = hashlib.sha256(f"{node}/{index}".encode()).hexdigest()
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


@dataclass(frozen=True)
class Gpu:
    """One GPU or MIG instance and the pod holding it (namespace/pod None: not allocated)."""

    namespace: str | None = None
    pod: str | None = None
    container: str = "main"
    node: str = "gpu-node-1"
    index: int = 0
    mig: Mig | None = None
    model: str = A100
    driver: str = "535.104.05"
    uuid: str = field(default="")

    def __post_init__(self) -> None:
        if not self.uuid:
            object.__setattr__(self, "uuid", gpu_uuid(self.node, self.index))

    @property
    def key(self) -> tuple[str, int | None]:
        """What tells two series apart: MIG instances share their parent's UUID."""
        return (self.uuid, self.mig.instance_id if self.mig else None)

    def history(
        self,
        profile: Profile,
        *,
        exporter: ExporterPod | None = None,
        replaced: tuple[Replacement, ...] = (),
        style: LabelStyle = LabelStyle.SERVICE_MONITOR,
        metrics: tuple[str, ...] = ALL_METRICS,
    ) -> GpuSeries:
        return GpuSeries(
            gpu=self,
            profile=profile,
            exporter=exporter or ExporterPod(),
            replaced=replaced,
            style=style,
            metrics=metrics,
        )

    def exposed_labels(self, style: LabelStyle = LabelStyle.SERVICE_MONITOR) -> dict[str, str]:
        """Labels as dcgm-exporter prints them on /metrics, before Prometheus touches them."""
        labels = {
            "gpu": str(self.index),
            "UUID": self.uuid,
            "pci_bus_id": f"00000000:{0x07 + self.index:02X}:00.0",
            "device": f"nvidia{self.index}",
            "modelName": self.model,
        }
        if self.mig:
            labels |= {"GPU_I_PROFILE": self.mig.profile, "GPU_I_ID": str(self.mig.instance_id)}
        hostname_key = "Hostname" if style is LabelStyle.SERVICE_MONITOR else "hostname"
        labels |= {hostname_key: self.node, "DCGM_FI_DRIVER_VERSION": self.driver}
        if self.namespace and self.pod:
            labels |= {"container": self.container, "namespace": self.namespace, "pod": self.pod}
        return labels

    def stored_labels(self, exporter: ExporterPod, style: LabelStyle) -> dict[str, str]:
        """Labels as Prometheus stores them after the scrape's relabelling."""
        exposed = self.exposed_labels(style)
        target = exporter.target_labels()
        if style is LabelStyle.HONOR_LABELS:
            return target | exposed
        renamed = {f"exported_{k}" if k in target else k: v for k, v in exposed.items()}
        return renamed | target


@dataclass(frozen=True)
class Replacement:
    """From `at` on, a new exporter pod (new pod name and IP) scrapes the same GPU: series split."""

    at: float
    exporter: ExporterPod


@dataclass(frozen=True)
class GpuSeries:
    """A GPU's recorded history, ready to be written as OpenMetrics and backfilled."""

    gpu: Gpu
    profile: Profile
    exporter: ExporterPod = ExporterPod()
    replaced: tuple[Replacement, ...] = ()
    style: LabelStyle = LabelStyle.SERVICE_MONITOR
    metrics: tuple[str, ...] = ALL_METRICS

    def exporter_at(self, t: float) -> ExporterPod:
        current = self.exporter
        for replacement in self.replaced:
            if replacement.at <= t:
                current = replacement.exporter
        return current

    def value(self, metric: str, t: float) -> float | None:
        """The sample of `metric` at `t` (None: no sample). On MIG, GPU_UTIL is always 0."""
        pct = self.profile.utilization(t)
        return None if pct is None else metric_value(metric, self.gpu, pct)


def metric_value(metric: str, gpu: Gpu, pct: float) -> float:
    """GPU_UTIL in percent (always 0 on a MIG instance), GR_ENGINE_ACTIVE as a 0-1 ratio; an
    evidence gauge's level is its own value."""
    if metric in RAW_METRICS:
        return pct
    if metric == GPU_UTIL:
        return 0.0 if gpu.mig else pct
    return pct / 100.0


def fleet(
    *,
    workloads: int,
    gpus_per_workload: int,
    profile_for: dict[int, Profile] | None = None,
    default: Profile | None = None,
    gpus_per_node: int = 8,
    namespaces: int = 10,
) -> list[GpuSeries]:
    """A cluster's worth of series: workload i is pod `wl-<i>-worker-0` in `team-<i % namespaces>`,
    holding `gpus_per_workload` GPUs; each node of `gpus_per_node` GPUs has its own exporter pod."""
    profiles = profile_for or {}
    series = []
    for slot in range(workloads * gpus_per_workload):
        i, node_no = slot // gpus_per_workload, slot // gpus_per_node
        gpu = Gpu(
            namespace=f"team-{i % namespaces}",
            pod=f"wl-{i:04d}-worker-0",
            node=f"gpu-node-{node_no:04d}",
            index=slot % gpus_per_node,
        )
        exporter = ExporterPod(
            pod=f"nvidia-dcgm-exporter-{node_no:05x}",
            ip=f"10.{128 + node_no // 65536}.{node_no // 256 % 256}.{node_no % 256}",
        )
        series.append(gpu.history(profiles.get(i, default or Profile.busy()), exporter=exporter))
    return series
