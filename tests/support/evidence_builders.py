"""Builders for one cycle's evidence (ISSUE 16), in the shapes the readers hand the domain.

    seen = evidence().framebuffer(NS, "w-0", uuid="GPU-a", since=minutes_ago(20)).build()
    fleet = usage().gpu(NS, "w-0", uuid="GPU-a").seeing(seen).build()

A sighting is activity a signal saw from `since` to `until` (default: the latest slot, at
`NOW`); its detail is what a person reads. Power, PCIe and NVLink sightings are device-level
(one value for the whole board), as their rows in `SIGNALS` say.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Self

from autoscaler.domain.usage.evidence import FleetEvidence, Sighting, Signal
from autoscaler.domain.usage.gpus import GpuKey
from tests.support.domain_builders import NOW


@dataclass
class EvidenceBuilder:
    gpus: dict[GpuKey, list[Sighting]] = field(default_factory=dict)
    pods: dict[tuple[str, str], list[Sighting]] = field(default_factory=dict)
    notes: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    failures: dict[Signal, str] = field(default_factory=dict)

    def device(
        self,
        signal: Signal,
        namespace: str,
        pod: str,
        *,
        uuid: str,
        detail: str,
        since: datetime,
        until: datetime = NOW,
        mig: str | None = None,
    ) -> Self:
        key = GpuKey(namespace, pod, uuid, mig)
        sighting = Sighting(signal, until, since, detail)
        self.gpus.setdefault(key, []).append(sighting)
        return self

    def framebuffer(
        self,
        namespace: str,
        pod: str,
        *,
        uuid: str,
        since: datetime,
        until: datetime = NOW,
        mig: str | None = None,
        rose_gib: float = 18.0,
    ) -> Self:
        detail = f"framebuffer rose {rose_gib:.1f} GiB"
        return self.device(
            Signal.FRAMEBUFFER,
            namespace,
            pod,
            uuid=uuid,
            detail=detail,
            since=since,
            until=until,
            mig=mig,
        )

    def power(
        self,
        namespace: str,
        pod: str,
        *,
        uuid: str,
        since: datetime,
        until: datetime = NOW,
        mig: str | None = None,
        watts: float = 212,
        baseline: float = 61,
    ) -> Self:
        detail = f"power {watts:.0f} W > baseline {baseline:.0f} W"
        return self.device(
            Signal.POWER,
            namespace,
            pod,
            uuid=uuid,
            detail=detail,
            since=since,
            until=until,
            mig=mig,
        )

    def ray_tasks(
        self, namespace: str, pod: str, *, since: datetime, until: datetime = NOW, running: int = 3
    ) -> Self:
        sighting = Sighting(Signal.RAY, until, since, f"{running} Ray tasks running")
        self.pods.setdefault((namespace, pod), []).append(sighting)
        return self

    def note(self, namespace: str, pod: str, text: str) -> Self:
        self.notes.setdefault((namespace, pod), []).append(text)
        return self

    def failing(self, signal: Signal, why: str) -> Self:
        self.failures[signal] = why
        return self

    def build(self) -> FleetEvidence:
        return FleetEvidence(
            gpus={key: tuple(found) for key, found in self.gpus.items()},
            pods={pod: tuple(found) for pod, found in self.pods.items()},
            notes={pod: tuple(said) for pod, said in self.notes.items()},
            failures=dict(self.failures),
        )


def evidence() -> EvidenceBuilder:
    return EvidenceBuilder()
