"""What the circuit breaker compares each cycle with: the workloads busy last cycle.

Kept in memory from one cycle to the next. After a start there is no last cycle in memory,
so it is read from Prometheus history instead (one extra fleet-wide read, at now minus the
loop interval, on the first cycle only, every rule's view in one read, decided as the loop
would have then): a restart in the middle of a mass idle must not disarm the breaker. Each
workload is judged under its own rule, with the verdict its decision carries.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from autoscaler.core.ports import MetricSource
from autoscaler.domain.guards.breaker import Turnover
from autoscaler.domain.guards.turnover import judge, observable, turnover
from autoscaler.domain.models import (
    Decision,
    FleetUsage,
    Pauses,
    UsageView,
    WorkloadInfo,
    WorkloadRef,
)
from autoscaler.domain.policy.decisions import Policy, Usage, decide


class FleetWatch:
    def __init__(
        self,
        *,
        policy: Policy,
        metrics: MetricSource,
        interval: timedelta,
        logger: logging.Logger,
    ) -> None:
        self._policy = policy
        self._metrics = metrics
        self._interval = interval  # the loop's
        self._log = logger
        self._busy: frozenset[WorkloadRef] | None = None  # busy last cycle; None after a start

    def observe(
        self,
        workloads: Sequence[WorkloadInfo],
        decisions: Sequence[Decision],
        usage: Usage,
        *,
        now: datetime,
    ) -> Turnover:
        """This cycle's turnover against last cycle's busy workloads, which it then replaces;
        `decisions` (one per workload, made from `usage`) carry each usage verdict."""
        judged = judge(workloads, decisions, usage, now=now)
        before = self._busy if self._busy is not None else self._from_history(workloads, now=now)
        self._busy = judged.busy(before)
        return turnover(before, judged, observed=observable(usage))

    def _from_history(
        self, workloads: Sequence[WorkloadInfo], *, now: datetime
    ) -> frozenset[WorkloadRef]:
        then = now - self._interval
        views = {r.name: UsageView(r.usage.window, r.usage.threshold) for r in self._policy.rules}
        read = self._metrics.read_views(set(views.values()), now=then)
        past: dict[str, FleetUsage] = {name: read[view] for name, view in views.items()}
        failure = next((p.failure for p in past.values() if p.failure is not None), None)
        if failure is not None:
            self._log.warning("breaker baseline not read from history: %s", failure)
        # Pauses do not matter: the verdict is taken before any gate.
        decided = [
            decide(w, past, policy=self._policy, pauses=Pauses(), now=then) for w in workloads
        ]
        return judge(workloads, decided, past, now=then).busy(frozenset())
