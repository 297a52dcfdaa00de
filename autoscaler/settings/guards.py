"""Settings of the guards against doing harm, mounted as `guards:` in the settings tree.

The hourly cap sits beside the per-cycle one, in `policy.maxDeactivationsPerHour`.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, model_validator

from autoscaler.domain.guards.breaker import BreakerRules
from autoscaler.domain.guards.screen import ContestedRules, GuardRules
from autoscaler.settings.base import POSITIVE, Duration, Section


class BreakerSettings(Section):
    min_workloads: int = Field(
        3,
        ge=0,
        description="The mass-idle breaker opens only when MORE than this many workloads busy "
        "last cycle turn idle or unknown in one cycle (count). Three keeps a small fleet, "
        "where two people stopping together is ordinary, from tripping it.",
    )
    share_percent: float = Field(
        20,
        ge=0,
        le=100,
        description="... and more than this share of them (percent of the workloads busy last "
        "cycle). A healthy fleet rarely sees a fifth of its busy work stop within one cycle; "
        "an exporter restarting or frozen counters do exactly that.",
    )
    close_after_cycles: int = Field(
        3,
        ge=1,
        description="Consecutive normal cycles that close an open breaker (cycles). Three "
        "outlasts a flapping exporter; an admin can close it at once through the API.",
    )


class ContestedSettings(Section):
    undone_within: Duration = Field(
        timedelta(minutes=10),
        description="A deactivation of ours seen set back to active this soon counts as undone "
        "(duration). Ten minutes catches a GitOps tool's self-heal or a user's reflex, not a "
        "reactivation the next morning.",
        json_schema_extra=POSITIVE,
    )
    times: int = Field(
        3,
        ge=1,
        description="Undone this many times within `within`, a workload is contested: left "
        "alone until an admin clears the mark (count). Three is a pattern, not an accident.",
    )
    within: Duration = Field(
        timedelta(hours=24),
        description="The span the undos are counted over (duration). A day sees every shift "
        "of the people or tools involved.",
        json_schema_extra=POSITIVE,
    )

    @model_validator(mode="after")
    def _spans_are_positive(self) -> ContestedSettings:
        if self.undone_within <= timedelta(0) or self.within <= timedelta(0):
            raise ValueError("undoneWithin: undoneWithin and within must be longer than 0s")
        return self


class GuardSettings(Section):
    breaker: BreakerSettings = Field(
        default_factory=BreakerSettings,
        description="The mass-idle circuit breaker: when more than max(minWorkloads, "
        "sharePercent % of the workloads busy last cycle) turn idle or unknown in one cycle (an "
        "exporter restarting, frozen counters), the data is more likely wrong than the fleet, "
        "so every deactivation waits until closeAfterCycles normal cycles in a row, or an "
        "admin's POST /api/v1/breaker/reset. Reported in /readyz (without failing it), "
        "GET /api/v1/breaker and an Event.",
    )
    contested: ContestedSettings = Field(
        default_factory=ContestedSettings,
        description="When to stop fighting another writer over `spec.active` (a GitOps tool, "
        "a user): a workload whose deactivation was undone within undoneWithin, `times` times "
        "within `within`, is marked contested and left alone until an admin clears the mark "
        "(DELETE /api/v1/workloads/<namespace>/<name>/contested).",
    )

    def rules(self, *, max_per_hour: int) -> GuardRules:
        """The domain's rules; the hourly cap is `policy.maxDeactivationsPerHour`."""
        breaker, contested = self.breaker, self.contested
        return GuardRules(
            max_per_hour=max_per_hour,
            breaker=BreakerRules(
                min_workloads=breaker.min_workloads,
                share=breaker.share_percent / 100,
                close_after=breaker.close_after_cycles,
            ),
            contested=ContestedRules(
                undone_within=contested.undone_within,
                times=contested.times,
                span=contested.within,
            ),
        )
