"""Rule `reclaim: via-kueue`'s metrics (docs/RECLAIM.md), from each published snapshot: the
workloads carrying our mark for Kueue's preemption, counted by namespace (never named:
/metrics answers without a token), and whether Kueue serves the priority boost the rule
rests on, as Kueue's Configuration was read that cycle.
"""

from __future__ import annotations

import collections

from prometheus_client import CollectorRegistry, Gauge

from autoscaler.domain.kueue_config import PRIORITY_BOOST_GATE
from autoscaler.domain.models import Snapshot
from autoscaler.domain.policy.via_kueue import GATE_WORDS, marked_at
from autoscaler.domain.program import METRIC_PREFIX

VIA_KUEUE_METRIC_NAMES = (
    METRIC_PREFIX + "marked_for_preemption_workloads",
    METRIC_PREFIX + "kueue_feature_gate",
)


class ViaKueueGauges:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.marked = Gauge(
            METRIC_PREFIX + "marked_for_preemption_workloads",
            "Workloads carrying our priority boost for Kueue's preemption (rule reclaim: "
            "via-kueue) in the latest cycle, by namespace.",
            ["namespace"],
            registry=registry,
        )
        self.gate = Gauge(
            METRIC_PREFIX + "kueue_feature_gate",
            "1 for the state (on, off, unknown) of a Kueue feature gate a rule rests on, as "
            "Kueue's Configuration said in the latest cycle; all 0 while no rule needs it.",
            ["gate", "state"],
            registry=registry,
        )
        self._gate(None)

    def observe(self, snapshot: Snapshot) -> None:
        counts = collections.Counter(
            row.ref.namespace for row in snapshot.workloads if marked_at(row.info) is not None
        )
        self.marked.clear()
        for namespace, count in counts.items():
            self.marked.labels(namespace=namespace).set(count)
        gate = snapshot.kueue_gate
        self._gate(GATE_WORDS[gate.on] if gate is not None else None)

    def _gate(self, state: str | None) -> None:
        for word in GATE_WORDS.values():
            self.gate.labels(gate=PRIORITY_BOOST_GATE, state=word).set(1 if word == state else 0)
