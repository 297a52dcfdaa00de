"""How often each state came out of the policy's decisions, for the report (ISSUE 16).

Counted at the steps the replay judges: those where a workload could be acted on (no slot
above the threshold in its window) and those where it could be idle-held (some GPUs busy,
others idle the whole window). Plainly busy steps are skipped unjudged, for speed, so `busy`
is not counted. Loading and idle-held never stop a workload; these counts show how often the
evidence signals and the per-GPU judgement held one back.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from autoscaler.backtest.identity import WorkloadKey
from autoscaler.domain.models import Decision, State

SHOWN = (State.IDLE, State.LOADING, State.IDLE_HELD, State.UNKNOWN)  # always listed
JUDGED_NOTE = "plainly busy steps are not judged"


@dataclass(frozen=True)
class StateCount:
    state: State
    steps: int  # decision steps that came out in this state
    workloads: int  # RayClusters that were in it at least once

    def as_json(self) -> dict[str, Any]:
        return {"state": self.state.value, "steps": self.steps, "rayClusters": self.workloads}


@dataclass
class StateTally:
    steps: Counter[State] = field(default_factory=Counter)
    seen: dict[State, set[WorkloadKey]] = field(default_factory=dict)

    def add(self, key: WorkloadKey, decision: Decision) -> None:
        self.steps[decision.state] += 1
        self.seen.setdefault(decision.state, set()).add(key)

    def counts(self) -> tuple[StateCount, ...]:
        """The always-listed states first, then any other that came out, by name."""
        others = sorted((s for s in self.steps if s not in SHOWN), key=lambda s: s.value)
        return tuple(
            StateCount(state, self.steps[state], len(self.seen.get(state, ())))
            for state in (*SHOWN, *others)
        )


def state_lines(counts: tuple[StateCount, ...]) -> list[str]:
    listed = ", ".join(f"{c.state.value} {c.steps} ({c.workloads})" for c in counts)
    return [
        f"States at the steps judged (the policy's column; {JUDGED_NOTE}): steps (RayClusters)",
        listed,
    ]
