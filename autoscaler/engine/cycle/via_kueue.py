"""Rule `reclaim: via-kueue` in the cycle (the judgement is `domain/policy/via_kueue.py`):
whether Kueue serves the priority boost, read once a cycle from Kueue's Configuration
through the `KueueFeatures` port only while a rule says via-kueue (the cluster adapters read
it from their watch cache, or with one list call), then the cycle's decisions judged.

The gate's state is logged in one line at the first cycle (start-up) and whenever it
changes; where it is off or unknown, such a rule does nothing at all (docs/RECLAIM.md).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from autoscaler.core.ports import KueueFeatures
from autoscaler.domain.kueue_config import PRIORITY_BOOST_GATE, GateServed, gate_served
from autoscaler.domain.models import Decision
from autoscaler.domain.policy.decisions import Policy
from autoscaler.domain.policy.rules import Reclaim
from autoscaler.domain.policy.via_kueue import judge, marked_at
from autoscaler.engine.cycle.stage import CycleInputs


def uses_via_kueue(policy: Policy) -> bool:
    return any(rule.reclaim is Reclaim.VIA_KUEUE for rule in policy.rules)


class ViaKueue:
    def __init__(
        self, *, features: KueueFeatures | None, policy: Policy, logger: logging.Logger
    ) -> None:
        self._features = features
        self._wanted = uses_via_kueue(policy)
        self._log = logger
        self._said: str | None = None  # the line logged last

    def served(self) -> GateServed | None:
        """Whether Kueue serves the priority boost; None when no rule says via-kueue."""
        if not self._wanted:
            return None
        config = self._features.kueue_configuration() if self._features is not None else None
        found = gate_served(config, PRIORITY_BOOST_GATE)
        if found.line != self._said:
            level = logging.INFO if found.on else logging.WARNING
            doing = "" if found.on else "; rules with reclaim: via-kueue do nothing"
            self._log.log(level, "%s%s", found.line, doing, extra={"gate": found.gate})
            self._said = found.line
        return found

    def judged(self, inputs: CycleInputs, decisions: Sequence[Decision]) -> tuple[Decision, ...]:
        """The decisions with marks, unmarks and deactivations after Kueue's preemption; a
        fleet without via-kueue rules nor marks of ours passes unchanged."""
        if inputs.served is None and not any(marked_at(w) for w in inputs.workloads):
            return tuple(decisions)
        return judge(
            inputs.workloads,
            decisions,
            served=inputs.served,
            by_uid=inputs.by_uid(),
            pauses=inputs.pauses,
            now=inputs.now,
        )
