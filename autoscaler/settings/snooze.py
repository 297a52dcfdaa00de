"""The snooze bounds of the warning stage (ISSUE 15), as `policy.snooze` sets them for the
default rule and a rule's `snooze` overrides them.

Two sections, like the exemptions: the policy's carries the defaults, a rule's leaves each
key unset to inherit. The checks across sections (a `notify` name that no target has, a
`delete` rule without `deleteAfter`) are the rules' (`settings/rule_settings.py`).
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field

from autoscaler.settings.base import Duration, Section


class SnoozeSettings(Section):
    """The default rule's snooze bounds (`policy.snooze`)."""

    max_duration: Duration = Field(
        timedelta(hours=24),
        gt=timedelta(0),
        description="Longest snooze one request (REST, CLI, a link, a hand-set "
        "`snoozed-until`) may ask; a longer one is clipped to it and the clip is audited. A "
        "day covers a night and a meeting-filled morning; an exemption is for longer.",
    )
    per_day: int = Field(
        3,
        ge=0,
        description="Snoozes granted per workload in any 24 hours (count); the next one is "
        "refused. Three lets a person answer each warning of a working day; 0 turns "
        "snoozing off.",
    )


class RuleSnoozeSettings(Section):
    """A rule's snooze bounds; each unset key inherits the default rule's (`policy.snooze`)."""

    max_duration: Duration | None = Field(
        None,
        gt=timedelta(0),
        description="Longest snooze for this rule's workloads. Unset: policy.snooze.maxDuration.",
    )
    per_day: int | None = Field(
        None,
        ge=0,
        description="Snoozes granted per workload in any 24 hours; 0: none. Unset: "
        "policy.snooze.perDay.",
    )
