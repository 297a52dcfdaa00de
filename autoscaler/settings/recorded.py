"""`prometheus.recordedSeries`: whether a fleet read may use the recording rules' per-slot
peaks (docs/RECORDING-RULES.md) instead of the raw SLOTS query, and when it must not trust them.

Recorded data that cannot be trusted never makes anything idle: absent or stale recordings
send the whole read to the raw queries, a GPU whose recorded slots have holes is read raw.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

from pydantic import Field, field_validator

from autoscaler.settings.base import Duration, Section

LOOKBACK = timedelta(minutes=5)  # Prometheus' default lookback delta


class RecordedSeriesSettings(Section):
    mode: Literal["auto", "off"] = Field(
        "auto",
        description="auto: read the recorded slots when every signal has them and they are "
        "fresh, else the raw queries (a warning and idle_gpu_autoscaler_usage_source say "
        "which). off: always the raw queries, without even looking for recordings.",
    )
    max_age: Duration = Field(
        timedelta(minutes=3),
        description="How old the newest recorded slot of a signal may be for the recordings "
        "to count as fresh: one slot for the rule group's interval plus the ruler's "
        "evaluation delay. At most 5m, Prometheus' lookback: older samples are not returned.",
    )
    max_raw_gpus: int = Field(
        500,
        ge=0,
        description="At most this many GPUs with holes in their recorded slots are read raw "
        "by one narrowed query per signal (their UUIDs in one matcher); above it the whole "
        "read is raw, since a longer matcher would cost more than the raw read it saves.",
    )

    @field_validator("max_age")
    @classmethod
    def _within_lookback(cls, value: timedelta) -> timedelta:
        if not timedelta(0) < value <= LOOKBACK:
            raise ValueError("must be positive and at most 5m (Prometheus' lookback)")
        return value
