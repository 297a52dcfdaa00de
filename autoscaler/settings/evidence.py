"""`prometheus.evidence`: the evidence signals besides compute utilization (ISSUE 16).

Each signal is one fleet-wide query per cycle (the power baseline, when learned, one more),
whatever the number of workloads and rules. A signal counts only where its series exist:
activity makes a workload busy (Ray tasks) or loading (the device signals), its absence is
no evidence either way. A signal whose query fails or times out makes the workloads it
covers unknown for that cycle, never idle. Set `enabled: false` to stop reading one.

Each signal of `autoscaler.domain.usage.evidence.SIGNALS` has a section here named as it; a
device signal's holds `enabled`, `metric` and the bar its row names (`EvidenceSettings.bar`).
"""

from __future__ import annotations

from typing import Annotated, Protocol

from pydantic import Field, StringConstraints

from autoscaler.domain.usage.evidence import Signal
from autoscaler.settings.base import Section

# Names go into PromQL as written: anything else is refused at load time, naming the key.
MetricName = Annotated[str, StringConstraints(pattern=r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")]
LabelName = Annotated[str, StringConstraints(pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")]

# A Ray state name as Ray prints it (`RUNNING`, `ALIVE`): joined into a PromQL regex unescaped.
RayState = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_]+$")]


class DeviceSignalSection(Protocol):
    """What every device signal's section holds, besides its bar."""

    @property
    def enabled(self) -> bool: ...

    @property
    def metric(self) -> str: ...


class FramebufferSettings(Section):
    enabled: bool = Field(True, description="Read framebuffer growth as loading evidence.")
    metric: MetricName = Field(
        "DCGM_FI_DEV_FB_USED", description="dcgm-exporter's framebuffer used, in MiB."
    )
    min_rise_mib: float = Field(
        256,
        gt=0,
        description="A slot whose framebuffer grew by at least this many MiB is loading. "
        "Weights or a dataset land at GiBs a minute; an idle process's allocator does not "
        "grow. A high but flat framebuffer (a model held, nothing run) is no evidence.",
    )


class PowerSettings(Section):
    enabled: bool = Field(True, description="Read power draw over the idle baseline as evidence.")
    metric: MetricName = Field(
        "DCGM_FI_DEV_POWER_USAGE", description="dcgm-exporter's power draw, W."
    )
    learn_baseline: bool = Field(
        True,
        description="Learn each GPU model's idle draw every cycle, from idle GPUs: a low "
        "quantile of the power of the GPUs of that model whose compute was idle the whole "
        "window.",
    )
    baseline_quantile: float = Field(
        0.1, gt=0, lt=1, description="The quantile of the learned baseline."
    )
    baselines: dict[str, float] = Field(
        default_factory=dict,
        description="Idle draw in watts per dcgm-exporter `modelName` (e.g. "
        '`{"NVIDIA A100-SXM4-80GB": 60}`); overrides the learned one. A model with no baseline '
        "(none set, none learned) gives no power evidence.",
    )
    margin_watts: float = Field(
        30,
        gt=0,
        description="Drawing this much above the baseline is evidence. A CUDA context alone "
        "lifts an idle board by a few tens of watts; copies and kernels by more.",
    )


class TransferSettings(Section):
    enabled: bool = Field(True, description="Read this receive rate as loading evidence.")
    metric: MetricName = Field(description="dcgm-exporter's receive rate, bytes per second.")
    min_bytes_per_second: float = Field(
        50e6,
        gt=0,
        description="A slot averaging at least this rate is loading; an idle GPU receives "
        "kilobytes a second.",
    )


class PcieSettings(TransferSettings):
    metric: MetricName = Field(
        "DCGM_FI_PROF_PCIE_RX_BYTES", description="dcgm-exporter's PCIe receive rate, bytes/s."
    )


class NvlinkSettings(TransferSettings):
    metric: MetricName = Field(
        "DCGM_FI_PROF_NVLINK_RX_BYTES", description="dcgm-exporter's NVLink receive rate, bytes/s."
    )


class RaySettings(Section):
    enabled: bool = Field(
        True,
        description="Read Ray's own metrics, when Ray exports them to the same Prometheus: "
        "tasks executing in a cluster's pods count as use. Live actors and an attached "
        "driver are shown, never counted: an idle notebook keeps its driver attached.",
    )
    tasks_metric: MetricName = Field(
        "ray_tasks",
        description="Ray's task count gauge, by `State` (summed per pod: Ray emits moves "
        "between states as +1/-1 points from several processes).",
    )
    running_states: tuple[RayState, ...] = Field(
        ("RUNNING", "RUNNING_IN_RAY_GET", "RUNNING_IN_RAY_WAIT"),
        min_length=1,
        description="The `State` values of `tasksMetric` that mean a task is executing; any "
        "above zero in a slot is use.",
    )
    finished_state: RayState = Field(
        "FINISHED",
        description="The `State` of `tasksMetric` that counts finished tasks. The count only "
        "grows while its process lives, so a rise within a slot is use: short tasks finish "
        "between two scrapes and never show as running.",
    )
    ignored_task_names: str = Field(
        "",
        description="A PromQL regular expression of task `Name`s never counted as use (for "
        "example a control loop that runs forever); empty: none ignored.",
    )
    actors_metric: MetricName = Field(
        "ray_actors", description="Ray's actor count gauge, by `State`."
    )
    alive_state: RayState = Field(
        "ALIVE",
        description="The `State` of `actorsMetric` counting live actors; shown, never use.",
    )
    jobs_metric: MetricName = Field(
        "ray_running_jobs",
        description="Ray's gauge of running jobs, exported by the head's GCS: a driver "
        "attached to the cluster (a notebook's `ray.init()` is one). Shown, never use.",
    )
    namespace_label: LabelName = Field(
        "namespace",
        description="The label naming the namespace of the Ray pod that exported a series "
        "(a PodMonitor's target label).",
    )
    pod_label: LabelName = Field(
        "pod", description="The label naming the Ray pod that exported a series (the same)."
    )


class EvidenceSettings(Section):
    framebuffer: FramebufferSettings = Field(
        default_factory=FramebufferSettings,
        description="Framebuffer growth: weights or data landing on the GPU (loading).",
    )
    power: PowerSettings = Field(
        default_factory=PowerSettings,
        description="Power drawn over the GPU model's idle draw (loading).",
    )
    pcie: PcieSettings = Field(
        default_factory=PcieSettings, description="PCIe receive: data arriving (loading)."
    )
    nvlink: NvlinkSettings = Field(
        default_factory=NvlinkSettings,
        description="NVLink receive: data from the other GPUs (loading).",
    )
    ray: RaySettings = Field(
        default_factory=RaySettings, description="Ray's own metrics: tasks executing (use)."
    )

    def reads(self, signal: Signal) -> bool:
        """Whether the signal is read (its section's `enabled`)."""
        on: bool = getattr(self, signal.value).enabled
        return on

    def device(self, signal: Signal) -> DeviceSignalSection:
        """A device signal's section."""
        section: DeviceSignalSection = getattr(self, signal.value)
        return section

    def bar(self, signal: Signal) -> float:
        """A device signal's bar, in its slot form's unit: the field its row names."""
        return float(getattr(self.device(signal), signal.row.bar))
