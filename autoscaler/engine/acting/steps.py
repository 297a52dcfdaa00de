"""The cycle's act steps in order, on the leader only, each with the same act context
(`acting/context.py`): stops (`stop.Deactivator`), via-kueue marks and unmarks
(`mark.Marker`), notices (`warn.Warner`: warnings,
all-clears, idle-held, deletion warnings), deletions (`delete.Deleter`). The pauses are read
again once before them, so a kill switch set mid-cycle holds warnings and deletions as well
as stops; each step reads its Workload again and decides again under them before writing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from autoscaler.core.errors import ClusterError
from autoscaler.domain.models import Action, ActionRecord, Decision
from autoscaler.domain.outcomes import Outcome
from autoscaler.engine.acting.context import ActContext
from autoscaler.engine.acting.delete import Deleter
from autoscaler.engine.acting.mark import MARKS, Marker
from autoscaler.engine.acting.stop import Deactivator
from autoscaler.engine.acting.warn import Warner
from autoscaler.engine.cycle.stage import CycleInputs, action_record
from autoscaler.engine.notify.notices import NOTICE_ACTIONS

ACTED = frozenset(
    {Action.DEACTIVATE, Action.DELETE, *MARKS, *NOTICE_ACTIONS}
)  # what the steps write


class ActSteps:
    def __init__(self, context: ActContext) -> None:
        """The three steps share the one act context the composition root built."""
        self._context = context
        self._deactivator = Deactivator(context)
        self._warner = Warner(context)
        self._deleter = Deleter(context)
        self._marker = Marker(context)

    def act(self, inputs: CycleInputs, decisions: Sequence[Decision]) -> tuple[ActionRecord, ...]:
        chosen = [d for d in decisions if d.action in ACTED]
        if not chosen or not self._context.leads():
            return ()  # nothing to write, or another replica leads: it acts
        try:
            pauses = self._context.cluster.read_pauses()  # a kill switch set mid-cycle still wins
        except ClusterError as exc:  # no write without knowing the kill switch
            skipped = Outcome.skipped(str(exc))
            return tuple(
                action_record(self._context.logger, d, now=inputs.now, outcome=skipped)
                for d in chosen
            )
        fresh = replace(inputs, pauses=pauses)
        return (
            self._deactivator.act(fresh, decisions)
            + self._marker.act(fresh, decisions)
            + self._warner.act(fresh, decisions)
            + self._deleter.act(fresh, decisions)
        )
