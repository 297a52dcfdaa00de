"""What the simulated exporter samples: the GPUs pods hold, and when it scrapes them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from autoscaler.domain.usage.gpus import GpuKey


@dataclass(frozen=True)
class GpuHolding:
    """A GPU held by a pod of a RayCluster, from the pod's start until its deletion."""

    key: GpuKey
    raycluster: str  # the owner's name, in key.namespace
    node: str
    start: datetime  # the pod runs (and the exporter reports it) from here
    end: datetime | None = None  # deleted; None while it runs
    index: int = 0  # the GPU's place among its RayCluster's GPUs (a profile may script each)

    def holds_at(self, second: int) -> bool:
        begun = self.start.timestamp() <= second
        return begun and (self.end is None or second < self.end.timestamp())


class GpuHoldings(Protocol):
    def gpu_holdings(self) -> Sequence[GpuHolding]:
        """Every GPU holding, running or ended, in start order."""
        ...


@dataclass(frozen=True)
class ExporterTiming:
    scrape: int = 30  # seconds between samples
    offset: int = 7  # samples fall at offset + k * scrape: off the slot edges, as in real life
    slot: int = 60  # policy.slot in seconds
    lookback: int = 24 * 3600  # policy.idleSinceLookback in seconds
    loading: int = 3600  # the longest maxLoading in seconds: how far back evidence reaches
