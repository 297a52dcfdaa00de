"""`idle-gpu-autoscaler recording-rules`: the rules file for the configured signals and slot."""

from __future__ import annotations

from autoscaler.adapters.prometheus.recording_rules import rules_file
from autoscaler.compose.serve import query_templates
from autoscaler.settings.tree import Settings


def recording_rules_text(settings: Settings, *, thanos: bool) -> str:
    """The file for `settings` (its signals, slot and SLOTS template); `thanos` adds the
    abort strategy a Thanos Ruler needs (docs/RECORDING-RULES.md)."""
    return rules_file(
        settings.prometheus.signals,
        slot=settings.policy.slot,
        template=query_templates(settings.prometheus.queries).slots,
        thanos=thanos,
    )
