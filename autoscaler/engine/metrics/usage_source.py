"""Which source the fleet reads take their slots from (docs/RECORDING-RULES.md): the recorded
series or the raw queries, why they fell back, and how many GPUs with holes in their recorded
slots were read raw. Registered only when the metric source is Prometheus; the metric source
calls `observe` after every read (core.ports.UsageSourceObserver), so the adapter never
imports the engine.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from autoscaler.domain.program import METRIC_PREFIX

SOURCES = ("recorded", "raw")
USAGE_SOURCE_METRIC_NAMES = (
    METRIC_PREFIX + "usage_source",
    METRIC_PREFIX + "usage_source_fallbacks_total",
    METRIC_PREFIX + "usage_raw_gpus",
)


class UsageSourceMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._source = Gauge(
            METRIC_PREFIX + "usage_source",
            "1 for the source the last fleet read took its slots from (recorded or raw).",
            ["source"],
            registry=registry,
        )
        self._fallbacks = Counter(
            METRIC_PREFIX + "usage_source_fallbacks",
            "Fleet reads that read raw what the recordings could not give, by reason: absent "
            "or stale recordings (the whole read), holes (some GPUs, or all above maxRawGpus).",
            ["reason"],
            registry=registry,
        )
        self._raw_gpus = Gauge(
            METRIC_PREFIX + "usage_raw_gpus",
            "GPUs the last fleet read took from the raw query: holes in their recorded slots.",
            registry=registry,
        )
        for source in SOURCES:
            self._source.labels(source=source).set(0)

    def observe(self, *, source: str, fallback: str | None, raw_gpus: int) -> None:
        for known in SOURCES:
            self._source.labels(source=known).set(1 if known == source else 0)
        if fallback is not None:
            self._fallbacks.labels(reason=fallback).inc()
        self._raw_gpus.set(raw_gpus)
