"""What the circuit breaker observes: which workloads are busy, and which of last cycle's busy
ones turned idle or unknown.

The usage verdict is taken before any policy gate (exemption, grace, pause, cap): the breaker
judges the data, not what the policy would do with it, each workload at its own rule's window
and threshold. A namespace the metric source cast doubt on (partial data), or a workload whose
rule cannot be evaluated, is not observed this cycle; its busy workloads stay in the baseline.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from autoscaler.domain.guards.breaker import Turnover
from autoscaler.domain.models import FleetUsage, State, WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.decisions import Policy, Usage, not_before, usage_for
from autoscaler.domain.usage.idleness import assess

TURNED = (State.IDLE, State.UNKNOWN)
# In use last cycle: loading and idle-held work is as much in use as busy work, so a mass
# turn from loading to idle trips the breaker too.
IN_USE = frozenset({State.BUSY, State.LOADING, State.IDLE_HELD})


@dataclass(frozen=True)
class Judged:
    """Usage verdicts of one cycle's running GPU workloads."""

    states: Mapping[WorkloadRef, State]  # the usage class, where the data can be judged
    doubtful: frozenset[WorkloadRef] = frozenset()  # running, but their data is in doubt

    def busy(self, before: frozenset[WorkloadRef]) -> frozenset[WorkloadRef]:
        """Next cycle's baseline: the ones in use (busy, loading, idle-held), plus last
        baseline's that are still running but could not be judged now."""
        busy = frozenset(ref for ref, state in self.states.items() if state in IN_USE)
        return busy | (before & self.doubtful)


def judge(
    workloads: Iterable[WorkloadInfo], usage: Usage, *, policy: Policy, now: datetime
) -> Judged:
    states, doubtful = {}, set()
    for workload in workloads:
        if not (workload.active and workload.admitted and workload.gpu_pods):
            continue
        match = policy.match(workload, usage)
        fleet = usage_for(usage, match.rule, now=now)
        if not match.known or fleet.doubt_about(workload.ref.namespace) is not None:
            doubtful.add(workload.ref)
            continue
        rules = match.rule.usage
        verdict = assess(workload, fleet, rules=rules, not_before=not_before(workload), now=now)
        states[workload.ref] = verdict.state
    return Judged(states, frozenset(doubtful))


def observable(usage: Usage) -> bool:
    """False when the whole read failed or every namespace is in doubt: nothing to judge."""
    fleets = [usage] if isinstance(usage, FleetUsage) else list(usage.values())
    return all(f.failure is None and "*" not in f.doubtful_namespaces for f in fleets)


def turnover(before: frozenset[WorkloadRef], judged: Judged, *, observed: bool) -> Turnover:
    states = judged.states
    judged_before = [ref for ref in before if ref in states]
    turned = sorted(str(ref) for ref in judged_before if states[ref] in TURNED)
    return Turnover(busy_before=len(judged_before), turned=tuple(turned), observed=observed)
