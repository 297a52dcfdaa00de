"""What the live service would have read about one workload at one step, from slot series.

The per-GPU figures follow the live queries (`autoscaler.adapters.prometheus.promql`) on a
Prometheus 2.x server, from the slot maxima `max_over_time(metric[slot])`:
- peak: the highest slot in (t - window, t], whose ranges together span [t - window, t];
- coverage: the slots holding a real value among the window + 1 steps of [t - window, t];
- last busy: the latest slot above the threshold within the lookback;
- newest sample: the end of the latest slot holding a real value, within Prometheus' 5-minute
  lookback delta. The live query reads the sample's own time, up to a slot earlier; staleness
  (a few minutes) is judged on this, so the difference is at most one slot at a series' end.
The live coverage counts the best single signal; slot series merge the signals, so a GPU
whose two signals have gaps at different times covers more here (one exporter never does that).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import repeat
from operator import ge

from autoscaler.backtest.timeline import Chunk, GpuTrack, WorkloadTrack
from autoscaler.domain import annotations as keys
from autoscaler.domain.models import GpuUsage, PodInfo, WorkloadInfo, WorkloadRef

LOOKBACK_DELTA = 300  # seconds an instant selector looks back (Prometheus' default)


@dataclass(frozen=True)
class Judged:
    info: WorkloadInfo
    gpus: dict[tuple[str, str], tuple[GpuUsage, ...]]


@dataclass(frozen=True)
class Reading:
    """The spans of one read, in slots and seconds."""

    span: int  # the window in slots
    threshold: float
    lookback: int  # seconds
    reactivated_at: int | None  # the workload's last (would-be) reactivation


def judge(track: WorkloadTrack, chunk: Chunk, index: int, reading: Reading) -> Judged | None:
    """The workload as Kubernetes and Prometheus would have shown it at chunk step `index`;
    None when none of its GPUs has a sample in the window (it is not there)."""
    now = chunk.time(index)
    oldest = now - reading.span * chunk.slot
    present: dict[str, list[GpuUsage]] = {}
    known: dict[str, int] = {}
    for gpu in track.gpus:
        known[gpu.key.pod] = known.get(gpu.key.pod, 0) + 1
        last = gpu.last_real_at(chunk, index)
        if last is not None and last > oldest:
            present.setdefault(gpu.key.pod, []).append(
                _usage(gpu, chunk, index, reading=reading, last_real=last)
            )
    if not present:
        return None
    pods = tuple(
        PodInfo(name=pod, phase="Running", created_at=_utc(track.pods[pod]), gpus=known[pod])
        for pod in sorted(present)
    )
    return Judged(
        info=_info(track, pods, reactivated_at=reading.reactivated_at),
        gpus={(track.key.namespace, pod): tuple(gpus) for pod, gpus in present.items()},
    )


def _info(
    track: WorkloadTrack, pods: tuple[PodInfo, ...], *, reactivated_at: int | None
) -> WorkloadInfo:
    started = min(pod.created_at for pod in pods)  # this incarnation: its oldest current pod
    annotations = {}
    if reactivated_at is not None:
        stamp = _utc(reactivated_at).strftime("%Y-%m-%dT%H:%M:%SZ")
        annotations[keys.REACTIVATED_AT] = stamp
    name = track.key.name
    return WorkloadInfo(
        ref=WorkloadRef(track.key.namespace, name),
        uid="",
        queue="",
        owner=track.key.owner,
        active=True,
        admitted=True,
        admitted_at=started,
        created_at=started,
        expected_pods=len(pods),
        pods=pods,
        annotations=annotations,
    )


def _usage(
    gpu: GpuTrack, chunk: Chunk, index: int, *, reading: Reading, last_real: int
) -> GpuUsage:
    now = chunk.time(index)
    window = gpu.window(index, reading.span + 1)  # the steps of [t - window, t]
    real = [v for v in window[1:] if v >= 0.0]
    last_loud = gpu.last_loud_at(chunk, reading.threshold, index)
    return GpuUsage(
        key=gpu.key,
        peak=max(real) if real else None,
        coverage=min(1.0, sum(map(ge, window, repeat(0.0))) / reading.span),
        last_sample_at=_utc(last_real) if now - last_real <= LOOKBACK_DELTA else None,
        last_busy_at=_utc(last_loud)
        if last_loud is not None and last_loud >= now - reading.lookback
        else None,
    )


def _utc(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)
