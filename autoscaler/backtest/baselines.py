"""Each GPU model's idle power, learned from one chunk of history as the live read learns it.

The live read takes, per dcgm-exporter `modelName`, a low quantile of the mean power of the
GPUs whose compute was idle for the whole window. Over a chunk the backtest does the same from
the series it already holds, without another query: a GPU's sample is its mean slot power over
the chunk's steps at which its compute had been at or below the threshold for the whole window
before (every slot real); the model's baseline is the quantile of those samples, interpolated
as PromQL's `quantile` does. Only GPUs a pod holds are seen (the backtest reads no others), and
MIG instances are left out (power is one value for the whole board).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from autoscaler.domain.usage.evidence import quantile
from autoscaler.domain.usage.gpus import GpuKey


def idle_steps(compute: Sequence[float], *, threshold: float, span: int) -> list[int]:
    """Chunk indices whose `span` slots up to and including them were all real and at or
    below `threshold` (NaN, no sample, is not idle)."""
    found: list[int] = []
    run = 0
    for index, value in enumerate(compute):
        run = run + 1 if value <= threshold else 0  # NaN compares False: the run breaks
        if run >= span:
            found.append(index)
    return found


def learned_baselines(
    power: Iterable[tuple[GpuKey, str, Sequence[float]]],
    compute: Mapping[GpuKey, Sequence[float]],
    *,
    threshold: float,
    span: int,
    quantile: float,
) -> dict[str, float]:
    """`power`: (GPU, modelName, slot mean watts aligned with the chunk's steps)."""
    samples: dict[str, list[float]] = {}
    for key, model, watts in power:
        if key.mig_instance is not None or key not in compute:
            continue
        steps = idle_steps(compute[key], threshold=threshold, span=span)
        idle = [watts[i] for i in steps if i < len(watts) and not math.isnan(watts[i])]
        if idle:
            samples.setdefault(model, []).append(sum(idle) / len(idle))
    return {model: promql_quantile(quantile, found) for model, found in samples.items()}


promql_quantile = quantile  # the live read's (PromQL's) interpolation
