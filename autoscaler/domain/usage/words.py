"""How every surface words a workload's class (ISSUE 16), so the CLI, the decision log and
the demo say the same thing: "idle-held (2 of 4 GPUs idle)", then the evidence on one line.

The functions take plain values (the state's word, counts, lines) rather than a `Decision`,
because the CLI has only the REST answer's JSON in hand.
"""

from __future__ import annotations

from collections.abc import Sequence

from autoscaler.domain.models import State

NO_EVIDENCE_SEEN = "-"


def idle_held_count(idle_held_gpus: int, gpus: int) -> str:
    """How many GPUs sat idle: "2 of 4 GPUs idle", or "2 GPUs idle" without a total."""
    if gpus >= idle_held_gpus > 0:
        return f"{idle_held_gpus} of {gpus} GPUs idle"
    return f"{idle_held_gpus} GPU{'' if idle_held_gpus == 1 else 's'} idle"


def class_text(state: str, *, idle_held_gpus: int = 0, gpus: int = 0) -> str:
    """The state's word; idle-held adds how many of the workload's GPUs sat idle."""
    if state == State.IDLE_HELD and idle_held_gpus > 0:
        return f"{state} ({idle_held_count(idle_held_gpus, gpus)})"
    return state


def evidence_text(lines: Sequence[str]) -> str:
    """The evidence lines as one line ("-" when no evidence signal saw anything)."""
    shown = [line for line in lines if line]
    return "; ".join(shown) if shown else NO_EVIDENCE_SEEN
