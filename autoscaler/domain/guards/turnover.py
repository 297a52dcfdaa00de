"""What the circuit breaker observes: which workloads are busy, and which of last cycle's busy
ones turned idle or unknown.

The usage verdict is the one each decision carries (`decide` takes it before any policy gate:
exemption, grace, pause, cap): the breaker judges the data, not what the policy would do with
it, each workload at its own rule's window and threshold. A namespace the metric source cast
doubt on (partial data), or a workload whose rule cannot be evaluated, is not observed this
cycle; its busy workloads stay in the baseline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from autoscaler.domain.guards.breaker import Turnover
from autoscaler.domain.models import Decision, FleetUsage, State, WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.decisions import Usage, usage_for

TURNED = (State.IDLE, State.NOT_RUNNING, State.UNKNOWN)
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
    workloads: Sequence[WorkloadInfo],
    decisions: Sequence[Decision],
    usage: Usage,
    *,
    now: datetime,
) -> Judged:
    """The running GPU workloads' usage classes, as their decisions (made from `usage`) say."""
    states, doubtful = {}, set()
    for workload, decision in zip(workloads, decisions, strict=True):
        if not (workload.active and workload.admitted and workload.gpu_pods):
            continue
        verdict = decision.assessment  # None: its rule cannot be evaluated
        fleet = usage_for(usage, decision.rule, now=now)
        if verdict is None or fleet.doubt_about(workload.ref.namespace) is not None:
            doubtful.add(workload.ref)
            continue
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
