"""What every act step works with, built once by the composition root: the act context.

Stop (`stop.py`), warn (`warn.py`) and delete (`delete.py`) share it, and so does the audited
writer (`audited.py`: the fresh check and the durable record before a stop or a deletion);
the cycle reads the cluster and Prometheus through the same ports.

Leadership has one word, `leads`: whether this replica leads now, the only one that makes the
loop's writes. It is asked before each write, so a leader that lost its Lease stops at once.
A single replica (leader election off, the demo, unit tests) always leads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from autoscaler.core.ports import AuditLog, Clock, ClusterReader, MetricSource, WorkloadActuator
from autoscaler.domain.policy.decisions import Policy
from autoscaler.engine.notify.notices import EVENTS_ONLY, NoticeTeller

Leads = Callable[[], bool]


def always_leads() -> bool:
    return True


@dataclass(frozen=True)
class ActContext:
    cluster: ClusterReader  # each Workload read again right before its write
    actuator: WorkloadActuator  # every write, in the act sequence shared with REST
    metrics: MetricSource  # the fresh check's newest samples, in one query
    audit: AuditLog  # the durable record written before a stop or a deletion
    policy: Policy  # each workload decided again under its rule
    clock: Clock
    logger: logging.Logger  # every action and every refusal to act, logged once
    teller: NoticeTeller = EVENTS_ONLY  # who is told besides the Event
    leads: Leads = always_leads
