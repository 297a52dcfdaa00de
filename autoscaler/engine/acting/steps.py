"""The cycle's act steps in order, on the leader only: stops (`acting.Deactivator`), notices
(`warner.Warner`: warnings, all-clears, idle-held, deletion warnings), deletions
(`deleting.Deleter`). The pauses are read again once before them, so a kill switch set
mid-cycle holds warnings and deletions as well as stops; each step reads its Workload again
and decides again under them before writing."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from autoscaler.core.errors import ClusterError
from autoscaler.core.ports import Clock, ClusterReader, WorkloadActuator
from autoscaler.domain.models import Action, ActionRecord, Decision
from autoscaler.domain.outcomes import Outcome
from autoscaler.domain.policy.decisions import Policy
from autoscaler.engine.acting.delete import Deleter
from autoscaler.engine.acting.leadership import Leads
from autoscaler.engine.acting.stop import Deactivator
from autoscaler.engine.acting.warn import Warner
from autoscaler.engine.cycle.screen import Guards
from autoscaler.engine.cycle.stage import CycleInputs, action_record
from autoscaler.engine.notify.notices import NOTICE_ACTIONS, NoticeTeller

ACTED = frozenset({Action.DEACTIVATE, Action.DELETE, *NOTICE_ACTIONS})  # what the steps write


class ActSteps:
    def __init__(
        self,
        *,
        cluster: ClusterReader,
        actuator: WorkloadActuator,
        policy: Policy,
        clock: Clock,
        logger: logging.Logger,
        guards: Guards | None,
        leads: Leads,
        notices: NoticeTeller,
    ) -> None:
        self._cluster, self._log, self._leads = cluster, logger, leads
        self._deactivator = Deactivator(
            cluster=cluster,
            actuator=actuator,
            policy=policy,
            clock=clock,
            logger=logger,
            guards=guards,
            leads=leads,
            notices=notices,
        )
        self._warner = Warner(
            cluster=cluster,
            actuator=actuator,
            policy=policy,
            logger=logger,
            notices=notices,
            leads=leads,
        )
        self._deleter = Deleter(
            cluster=cluster,
            actuator=actuator,
            policy=policy,
            logger=logger,
            guards=guards,
            notices=notices,
            leads=leads,
        )

    def act(self, inputs: CycleInputs, decisions: Sequence[Decision]) -> tuple[ActionRecord, ...]:
        chosen = [d for d in decisions if d.action in ACTED]
        if not chosen or not self._leads():
            return ()  # nothing to write, or another replica leads: it acts
        try:
            pauses = self._cluster.read_pauses()  # a kill switch set mid-cycle still wins
        except ClusterError as exc:  # no write without knowing the kill switch
            skipped = Outcome.skipped(str(exc))
            return tuple(
                action_record(self._log, d, now=inputs.now, outcome=skipped) for d in chosen
            )
        fresh = replace(inputs, pauses=pauses)
        return (
            self._deactivator.act(fresh, decisions)
            + self._warner.act(fresh, decisions)
            + self._deleter.act(fresh, decisions)
        )
