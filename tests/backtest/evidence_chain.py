"""The backtest's own evidence chain (range chunks, then the evidence track), asked at times."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from autoscaler.backtest.sightings import EvidenceTrack
from autoscaler.backtest.signals import evidence_queries
from autoscaler.backtest.source import ChunkPlan, RangeQueries, chunks, slot_queries
from autoscaler.domain.usage.evidence import FleetEvidence
from autoscaler.domain.usage.gpus import GpuKey
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings


def evidence_at(
    source: RangeQueries,
    times: Iterable[int],
    *,
    keys: Iterable[GpuKey],
    start: int,
    end: int,
    settings: Settings | None = None,
    chunk: timedelta = timedelta(hours=12),
) -> dict[int, FleetEvidence]:
    """What each decision at `times` would be handed for `keys`, each asked while the chunk
    holding it is the latest fed, as the replay asks. `start`, `end`: unix seconds, whole
    slots."""
    settings = settings or Settings()
    policy = build_policy(settings)
    slot = policy.default_rule.usage.slot
    seconds = int(slot.total_seconds())
    plan = ChunkPlan(start=start, end=end, slot=seconds, steps_per_chunk=chunk // slot)
    track = EvidenceTrack.for_policy(settings=settings, policy=policy)
    queries = slot_queries(settings.prometheus.signals, slot=slot)
    evidence = evidence_queries(settings.prometheus.evidence, slot=slot)
    wanted, asked, found = sorted(times), list(keys), {}
    for fetched in chunks(source, queries, plan, evidence=evidence):
        track.feed(fetched.chunk, fetched.evidence)
        last = fetched.chunk.time(fetched.chunk.steps - 1)
        while wanted and wanted[0] <= last:
            now = wanted.pop(0)
            found[now] = track.at(now, asked)
    return found
