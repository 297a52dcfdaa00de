"""The name of one GPU as the metrics see it, shared by utilization and evidence."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class GpuKey:
    """One GPU (or MIG instance) as seen by one pod, whatever exporter series it came from."""

    namespace: str
    pod: str
    uuid: str
    mig_instance: str | None = None
