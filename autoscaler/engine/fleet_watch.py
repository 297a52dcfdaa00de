"""What the circuit breaker compares each cycle with: the workloads busy last cycle.

Kept in memory from one cycle to the next. After a start there is no last cycle in memory,
so it is read from Prometheus history instead (one extra fleet-wide read, at now minus the
loop interval, on the first cycle only): a restart in the middle of a mass idle must not
disarm the breaker.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from autoscaler.core.ports import MetricSource
from autoscaler.domain.breaker import Turnover
from autoscaler.domain.models import FleetUsage, WorkloadInfo, WorkloadRef
from autoscaler.domain.policy import Policy
from autoscaler.domain.turnover import judge, observable, turnover


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
        self, workloads: Sequence[WorkloadInfo], usage: FleetUsage, *, now: datetime
    ) -> Turnover:
        """This cycle's turnover against last cycle's busy workloads, which it then replaces."""
        judged = judge(workloads, usage, policy=self._policy, now=now)
        before = self._busy if self._busy is not None else self._from_history(workloads, now=now)
        self._busy = judged.busy(before)
        return turnover(before, judged, observed=observable(usage))

    def _from_history(
        self, workloads: Sequence[WorkloadInfo], *, now: datetime
    ) -> frozenset[WorkloadRef]:
        rules, then = self._policy.rules, now - self._interval
        past = self._metrics.read_usage(window=rules.window, threshold=rules.threshold, now=then)
        if past.failure is not None:
            self._log.warning("breaker baseline not read from history: %s", past.failure)
        return judge(workloads, past, policy=self._policy, now=then).busy(frozenset())
