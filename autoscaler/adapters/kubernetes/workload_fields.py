"""Fields of a Kueue Workload that both its parser (`objects.py`) and the queue reader
(`adapters/kueue/queue_objects.py`) read, read one way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"

Obj = Mapping[str, Any]


def queue_name_of(workload: Obj) -> str:
    """The Workload's LocalQueue: spec.queueName, else the queue-name label; "" for none."""
    spec = workload.get("spec") or {}
    labels = (workload.get("metadata") or {}).get("labels") or {}
    return str(spec.get("queueName") or labels.get(QUEUE_NAME_LABEL) or "")


def priority_of(workload: Obj) -> int:
    """The Workload's spec.priority (from its WorkloadPriorityClass); 0 when unset."""
    return int((workload.get("spec") or {}).get("priority") or 0)
