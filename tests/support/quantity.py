"""Kubernetes quantities and timestamps, in the units the Kueue model counts in, for the test
API server's Kueue emulation. Quantities are read as the Kueue adapter reads them
(`domain/queues/quantity.py`) and written back here."""

from __future__ import annotations

from datetime import UTC, datetime

from autoscaler.domain.queues.quantity import parse_quantity

__all__ = ["format_quantity", "parse_quantity", "parse_time", "rfc3339"]


def rfc3339(at: datetime) -> str:
    """Kubernetes' timestamp format: second precision, UTC, 'Z'."""
    if at.tzinfo is None:
        raise ValueError(f"naive datetime {at!r}: the model works in timezone-aware UTC")
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    parsed = datetime.fromisoformat(text)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def format_quantity(resource: str, amount: int) -> str:
    """The canonical integer back as a quantity string ("1500m" or "2" for cpu)."""
    if resource != "cpu":
        return str(amount)
    return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
