"""What a stopped workload says of itself (`WorkloadView.stopped`), read back from the stop's
annotations on the Workload (`domain/audit/stopped.py`), so every replica answers the same."""

from __future__ import annotations

from datetime import datetime

from pydantic import ConfigDict, Field

from autoscaler.api.schemas.base import View


class StoppedView(View):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "byThisService": True,
                    "at": "2030-01-01T10:15:00Z",
                    "by": "rule default",
                    "rule": "default",
                    "waiter": "team-b/train",
                    "reason": "idle for the whole window: every GPU at or below 5% for 60m "
                    "(peak 1%, coverage 100%); frees quota for team-b/train, which waits",
                    "evidence": "idle 1h15m, peak 1% (threshold 5%), coverage 100%",
                    "idleSeconds": 4500.0,
                    "peak": 0.01,
                    "coverage": 1.0,
                    "threshold": 0.05,
                    "comesBackByItself": False,
                    "bringBack": "idle-gpu-autoscaler reactivate -n team-a my-workspace-cluster "
                    '--reason "back to work"',
                }
            ]
        },
    )

    by_this_service: bool = Field(
        description="Stopped by this service (its `deactivated-at` annotation is on the "
        "Workload or its owner); false: someone else set it inactive, and only `bringBack` "
        "is said."
    )
    at: datetime | None = Field(None, description="When the stop's patch applied.")
    by: str = Field(
        description='Who stopped it: `rule <name>`, the person of a "deactivate now", or '
        "`not this service`.",
        examples=["rule default"],
    )
    rule: str | None = Field(None, description="The rule that stopped it; null for a person.")
    waiter: str | None = Field(
        None,
        description="The waiting Workload it was stopped for (`namespace/name`); told as "
        '"a Workload in ClusterQueue <cq>" to a caller who may not read its namespace.',
    )
    reason: str | None = Field(None, description="The reason the stop was made on, as said then.")
    evidence: str | None = Field(
        None,
        description="The figures it was stopped on, on one line: idle how long, peak, coverage.",
    )
    idle_seconds: float | None = Field(
        None, description="How long it had been idle when stopped; null when not recorded."
    )
    peak: float | None = Field(None, description="Peak utilization in the window, 0..1.")
    coverage: float | None = Field(None, description="Share of the window with samples, 0..1.")
    threshold: float | None = Field(None, description="The rule's idle threshold, 0..1.")
    comes_back_by_itself: bool = Field(
        description="A requeue (Kueue's pod integration): it comes back when quota is free, "
        "with no command."
    )
    bring_back: str = Field(
        description="The command that reactivates it (a stop that lasts), or how it comes back."
    )
