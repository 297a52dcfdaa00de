"""Turns GPU histories into TSDB blocks with `promtool tsdb create-blocks-from openmetrics`.

promtool re-reads the whole input once per block window, so the block duration is chosen to put the
history into as few windows as possible (promtool only accepts 2h x 3^k). History must end in the
past: Prometheus' head block owns "now", backfilled blocks sit behind it.
"""

from __future__ import annotations

import resource
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .dcgm import GpuSeries
from .openmetrics import write_openmetrics

_HOUR_MS = 3_600_000
_BLOCK_DURATIONS_MS = tuple(2 * _HOUR_MS * 3**k for k in range(5))  # 2h .. 162h


@dataclass(frozen=True)
class BackfillStats:
    samples: int
    file_bytes: int
    write_s: float
    promtool_s: float
    promtool_cpu_s: float  # wall time lies on a shared machine; CPU time does not


def block_duration_for(start: int, end: int) -> str:
    """The smallest promtool block duration that holds [start, end] in one window, if any does."""
    for duration_ms in _BLOCK_DURATIONS_MS:
        if (start * 1000) // duration_ms == (end * 1000) // duration_ms:
            return f"{duration_ms // _HOUR_MS}h"
    return f"{_BLOCK_DURATIONS_MS[-1] // _HOUR_MS}h"


def create_blocks(
    openmetrics: Path, data_dir: Path, *, promtool: Path, max_block_duration: str = "2h"
) -> None:
    """Run promtool; it needs a real file (it seeks), never a pipe."""
    data_dir.mkdir(parents=True, exist_ok=True)
    command = [
        str(promtool),
        "tsdb",
        "create-blocks-from",
        "openmetrics",
        f"--max-block-duration={max_block_duration}",
        "--quiet",
        str(openmetrics),
        str(data_dir),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"promtool backfill failed ({done.returncode}): {done.stderr[-2000:]}")


def backfill_series(
    series: Sequence[GpuSeries],
    data_dir: Path,
    *,
    promtool: Path,
    start: int,
    end: int,
    step_s: int = 15,
    scratch_dir: Path | None = None,
) -> BackfillStats:
    """Write `series` sampled every `step_s` over [start, end] and turn them into blocks.

    The OpenMetrics file is ~530 bytes a sample (3 GB for 4,000 GPUs x 2 metrics x 3 h at 15 s);
    `scratch_dir` (default: beside `data_dir`) can point at a tmpfs such as /dev/shm."""
    if end > time.time():
        raise ValueError("backfilled history must end in the past (the head block owns 'now')")
    with tempfile.TemporaryDirectory(prefix="om-", dir=scratch_dir or data_dir.parent) as scratch:
        path = Path(scratch) / "history.om"
        began = time.perf_counter()
        samples = write_openmetrics(series, path, start=start, end=end, step_s=step_s)
        written, cpu_before = time.perf_counter(), _children_cpu_s()
        duration = block_duration_for(start, end)
        create_blocks(path, data_dir, promtool=promtool, max_block_duration=duration)
        return BackfillStats(
            samples=samples,
            file_bytes=path.stat().st_size,
            write_s=written - began,
            promtool_s=time.perf_counter() - written,
            promtool_cpu_s=_children_cpu_s() - cpu_before,
        )


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
