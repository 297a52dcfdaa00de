"""The metrics that say where the fleet reads' slots came from (docs/RECORDING-RULES.md)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from autoscaler.engine.metrics.usage_source import UsageSourceMetrics


def value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(f"idle_gpu_autoscaler_{name}", labels)


def test_the_last_read_s_source_is_one_and_every_fallback_is_counted_by_reason() -> None:
    registry = CollectorRegistry()
    metrics = UsageSourceMetrics(registry)
    assert value(registry, "usage_source", source="recorded") == 0.0
    metrics.observe(source="raw", fallback="stale", raw_gpus=0)
    metrics.observe(source="recorded", fallback="holes", raw_gpus=3)
    assert value(registry, "usage_source", source="recorded") == 1.0
    assert value(registry, "usage_source", source="raw") == 0.0
    assert value(registry, "usage_source_fallbacks_total", reason="stale") == 1.0
    assert value(registry, "usage_source_fallbacks_total", reason="holes") == 1.0
    assert value(registry, "usage_raw_gpus") == 3.0


def test_a_clean_recorded_read_counts_no_fallback() -> None:
    registry = CollectorRegistry()
    UsageSourceMetrics(registry).observe(source="recorded", fallback=None, raw_gpus=0)
    assert value(registry, "usage_source_fallbacks_total", reason="holes") is None
    assert value(registry, "usage_raw_gpus") == 0.0
