"""Kubernetes quantities and timestamps, in the units the Kueue model counts in. The
quantities are the domain's (`domain/queues/quantity.py`), shared with the Kueue adapter."""

from __future__ import annotations

from datetime import UTC, datetime

from autoscaler.domain.queues.quantity import format_quantity, parse_quantity

__all__ = ["format_quantity", "parse_quantity", "parse_time", "rfc3339"]


def rfc3339(at: datetime) -> str:
    """Kubernetes' timestamp format: second precision, UTC, 'Z'."""
    if at.tzinfo is None:
        raise ValueError(f"naive datetime {at!r}: the model works in timezone-aware UTC")
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    parsed = datetime.fromisoformat(text)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
