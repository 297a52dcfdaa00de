"""Ray's metrics as they sit in Prometheus, written for promtool to backfill.

Shapes (each cited in autoscaler/adapters/prometheus/ray.py's docstring):

- `ray_tasks` gauge labelled State, Name, Source, IsRetry, JobId (ray-project/ray
  src/ray/core_worker/metrics.h), SessionName (Ray's System Metrics reference: common to
  every metric); a FINISHED count only grows while its process lives (ray-project/ray#45333).
- `ray_actors` gauge labelled State (ALIVE from the GCS, Source "gcs"; ray-project/ray#45718),
  Name, JobId, SessionName.
- `ray_running_jobs` gauge with no labels of its own (ray-project/ray src/ray/gcs/metrics.h).
- Every series carries the target labels a KubeRay PodMonitor gives it (kuberay
  config/prometheus/podMonitor.yaml): the Ray pod's namespace, pod, container, endpoint,
  instance and job, and ray_io_cluster from the pod's `ray.io/cluster` label.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.support.prom.backfill import block_duration_for, create_blocks
from tests.support.prom.openmetrics import format_labels, format_value

SESSION = "session_2024-05-14_10-00-00_000000_1"
Values = Callable[[int], float | None]  # unix seconds -> value (None: no sample)


@dataclass(frozen=True)
class RayPod:
    """A KubeRay pod whose metrics port a PodMonitor scrapes."""

    namespace: str
    pod: str
    cluster: str
    ip: str
    node_type: str = "head"  # head | worker

    def target_labels(self) -> dict[str, str]:
        return {
            "namespace": self.namespace,
            "pod": self.pod,
            "container": f"ray-{self.node_type}",
            "endpoint": "metrics",
            "instance": f"{self.ip}:8080",
            "job": f"prometheus-system/ray-{self.node_type}s-monitor",
            "ray_io_cluster": self.cluster,
        }


@dataclass(frozen=True)
class RaySeries:
    metric: str
    labels: dict[str, str]
    pod: RayPod
    values: Values


def tasks(pod: RayPod, state: str, values: Values, *, name: str = "train_step") -> RaySeries:
    source = "executor" if state.startswith("RUNNING") else "core_worker"
    labels = {"State": state, "Name": name, "Source": source, "IsRetry": "0", "JobId": "01000000"}
    return RaySeries("ray_tasks", labels | {"SessionName": SESSION}, pod, values)


def actors(pod: RayPod, values: Values, *, name: str = "Counter") -> RaySeries:
    labels = {"State": "ALIVE", "Name": name, "Source": "gcs", "JobId": "01000000"}
    return RaySeries("ray_actors", labels | {"SessionName": SESSION}, pod, values)


def running_jobs(pod: RayPod, values: Values) -> RaySeries:
    return RaySeries("ray_running_jobs", {"SessionName": SESSION}, pod, values)


def constant(value: float) -> Values:
    return lambda _t: value


def between(start: int, end: int, value: float, *, otherwise: float | None = 0.0) -> Values:
    """`value` from `start` to `end` (inclusive), `otherwise` outside."""
    return lambda t: value if start <= t <= end else otherwise


def rising(start: int, end: int, *, base: float, every_s: int, born: bool = False) -> Values:
    """A finished count: `base` until `start`, one more every `every_s` up to `end`, then flat;
    `born`: no samples before `start` (a new process's series)."""

    def value(t: int) -> float | None:
        if t < start:
            return None if born else base
        return base + (min(t, end) - start) // every_s

    return value


def write_ray_openmetrics(series: Sequence[RaySeries], path: Path, *, start: int, end: int) -> None:
    """Every series sampled each 15 s over [start, end], one family at a time."""
    with path.open("w", encoding="utf-8") as out:
        for metric in sorted({one.metric for one in series}):
            out.write(f"# HELP {metric} {metric}\n# TYPE {metric} gauge\n")
            for one in (s for s in series if s.metric == metric):
                prefix = metric + format_labels(one.labels | one.pod.target_labels()) + " "
                for t in range(start, end + 1, 15):
                    value = one.values(t)
                    if value is not None:
                        out.write(f"{prefix}{format_value(value)} {t}\n")
        out.write("# EOF\n")


def backfill_ray(
    series: Sequence[RaySeries], data_dir: Path, *, promtool: Path, start: int, end: int
) -> None:
    path = data_dir.parent / "ray.om"
    write_ray_openmetrics(series, path, start=start, end=end)
    create_blocks(
        path, data_dir, promtool=promtool, max_block_duration=block_duration_for(start, end)
    )
