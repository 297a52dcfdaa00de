"""The reclaim modes side by side: the policy under `always` and under `when-contended`, over
the same history (and, when its rules mix the two, as configured: each workload under its own
rule's mode). Under rules each workload keeps its rule's window, threshold and action.

"Stops while someone waited" counts the deactivations made at a step where a Workload waited
in the same ClusterQueue or cohort: the stops that could shorten a wait. "Stops avoided" is how
many fewer deactivations `when-contended` makes. The contention test is the backtest's coarse
one ("someone waited in the queue or cohort"), not the live service's fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from autoscaler.backtest.deactivation import Deactivation
from autoscaler.backtest.queues import NO_QUEUE_DATA, QueueHistory
from autoscaler.backtest.variant import Variant

CONTENTION_TEST = (
    "contention test: someone waited in the queue or cohort at that step (coarser than "
    "the live service's fit, which frees a workload only for a waiter it lets in)"
)


@dataclass(frozen=True)
class ModeFigures:
    mode: str
    deactivations: int
    gpu_hours: float
    while_waiting: int  # stops at a step where someone waited in the queue or cohort
    avoided: int | None  # fewer stops than `always`; None for `always` itself

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "deactivations": self.deactivations,
            "gpuHours": round(self.gpu_hours, 3),
            "stopsWhileSomeoneWaited": self.while_waiting,
            "stopsAvoided": self.avoided,
        }


def compare(
    modes: Sequence[tuple[str, Sequence[Deactivation]]], queues: QueueHistory
) -> tuple[ModeFigures, ...]:
    """`modes`: (name, would-be deactivations), `always` first."""
    always = len(modes[0][1])

    def figures(mode: str, found: Sequence[Deactivation], first: bool) -> ModeFigures:
        waiting = sum(
            1 for d in found if queues.contended(d.workload.namespace, int(d.at.timestamp()))
        )
        hours = sum(d.gpu_hours for d in found)
        return ModeFigures(mode, len(found), hours, waiting, None if first else always - len(found))

    return tuple(figures(mode, found, i == 0) for i, (mode, found) in enumerate(modes))


def mode_lines(base: Variant, modes: tuple[ModeFigures, ...] | None) -> list[str]:
    """The comparison table, or why there is none."""
    if modes is None:
        return [NO_QUEUE_DATA]
    head = ["RECLAIM", "DEACTIVATIONS", "GPU-HOURS", "STOPS WHILE SOMEONE WAITED", "STOPS AVOIDED"]
    rows = [
        [
            m.mode,
            str(m.deactivations),
            f"{m.gpu_hours:.1f}",
            str(m.while_waiting),
            "-" if m.avoided is None else str(m.avoided),
        ]
        for m in modes
    ]
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    table = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [head, *rows]
    ]
    at = ", each workload under its own rule" if base.by_rule else f" at {base.label}"
    return [f"Reclaim modes{at}; {CONTENTION_TEST}", *table]
