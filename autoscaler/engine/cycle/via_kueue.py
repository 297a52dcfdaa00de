"""Rule `reclaim: via-kueue` in the cycle (the judgement is `domain/policy/via_kueue.py`):
whether Kueue serves the priority boost, read once a cycle from Kueue's Configuration
through the `KueueFeatures` port only while a rule says via-kueue (the cluster adapters read
it from their watch cache, or with one list call), then the cycle's decisions judged.

The gate's state is logged in one line at the first cycle (start-up) and whenever it
changes; where it is off or unknown, such a rule does nothing at all (docs/RECLAIM.md).

After Kueue preempts a marked Workload its pods are deleted, and this cycle judges it
pending (not admitted) with no usage of its own: the stop is judged as of the eviction
instead (`at_eviction`), on the Workload as the last cycle that saw it admitted read it
(its pods), against this cycle's fleet read, which holds their samples up to the eviction.
That memory is this process's: a Workload preempted before it saw one is judged unknown, and
loses the mark (Kueue requeues it) rather than be stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime

from autoscaler.core.ports import KueueFeatures
from autoscaler.domain.kueue_config import PRIORITY_BOOST_GATE, GateServed, gate_served
from autoscaler.domain.models import Action, Decision, Pauses, WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.decisions import Policy, Usage, decide
from autoscaler.domain.policy.rules import Reclaim
from autoscaler.domain.policy.via_kueue import judge, marked_at
from autoscaler.engine.cycle.stage import CycleInputs, staged


def uses_via_kueue(policy: Policy) -> bool:
    return any(rule.reclaim is Reclaim.VIA_KUEUE for rule in policy.rules)


class ViaKueue:
    def __init__(
        self, *, features: KueueFeatures | None, policy: Policy, logger: logging.Logger
    ) -> None:
        self._features = features
        self._policy = policy
        self._wanted = uses_via_kueue(policy)
        self._log = logger
        self._said: str | None = None  # the line logged last
        # Each Workload carrying our mark as last seen admitted, active, with its pods: what
        # its stop is judged on once Kueue has preempted it (bounded by the marks).
        self._seen_marked: dict[WorkloadRef, tuple[WorkloadInfo, datetime]] = {}

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

    def at_eviction(
        self, workloads: Sequence[WorkloadInfo], usage: Usage, *, pauses: Pauses, now: datetime
    ) -> Mapping[WorkloadRef, Decision]:
        """For each marked Workload Kueue evicted and an earlier cycle saw admitted, its
        decision as of the eviction (the Evicted condition's lastTransitionTime), staged as
        the cycles before staged it. Pure of the memory: `judged` moves it on."""
        found: dict[WorkloadRef, Decision] = {}
        policy = self._policy
        for workload in workloads:
            seen = self._seen_marked.get(workload.ref)
            preemption = workload.preemption
            if seen is None or preemption is None or marked_at(workload) is None:
                continue
            before, seen_at = seen
            evicted = workload.evicted_at or preemption.at
            if evicted is None:
                continue
            # Kueue's clock is not ours: the eviction lies between the cycle that last saw it
            # admitted and this one, whatever its condition's time says.
            evicted = min(max(evicted, seen_at), now)
            decided = decide(before, usage, policy=policy, pauses=pauses, now=evicted)
            found[workload.ref] = staged(before, decided, policy=policy, pauses=pauses, now=evicted)
        return found

    def _remember(
        self, workloads: Sequence[WorkloadInfo], decisions: Sequence[Decision], *, now: datetime
    ) -> None:
        """Each Workload marked (or being marked this cycle) as seen admitted, active, with
        pods, and when; one no longer admitted keeps what was seen before, until the mark
        goes."""
        seen: dict[WorkloadRef, tuple[WorkloadInfo, datetime]] = {}
        for workload, decision in zip(workloads, decisions, strict=True):
            if marked_at(workload) is None and decision.action is not Action.MARK:
                continue
            before = self._seen_marked.get(workload.ref)
            if workload.admitted and workload.active and workload.pods:
                seen[workload.ref] = (workload, now)
            elif before is not None:
                seen[workload.ref] = before
        self._seen_marked = seen

    def judged(self, inputs: CycleInputs, decisions: Sequence[Decision]) -> tuple[Decision, ...]:
        """The decisions with marks, unmarks and deactivations after Kueue's preemption; a
        fleet without via-kueue rules nor marks of ours passes unchanged."""
        if inputs.served is None and not any(marked_at(w) for w in inputs.workloads):
            self._seen_marked = {}
            return tuple(decisions)
        judged = judge(
            inputs.workloads,
            decisions,
            served=inputs.served,
            by_uid=inputs.by_uid,
            at_eviction=inputs.at_eviction,
            pauses=inputs.pauses,
            now=inputs.now,
        )
        self._remember(inputs.workloads, judged, now=inputs.now)
        return judged
