"""The cycle's act steps in order, on the leader only: stops (`acting.Deactivator`), notices
(`warner.Warner`: warnings, all-clears, idle-held, deletion warnings), deletions
(`deleting.Deleter`). Each reads its Workload again and decides again before writing."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from autoscaler.core.ports import Clock, ClusterReader, WorkloadActuator
from autoscaler.domain.models import ActionRecord, Decision
from autoscaler.domain.policy import Policy
from autoscaler.engine.acting import Deactivator
from autoscaler.engine.deleting import Deleter
from autoscaler.engine.guarding import Guards
from autoscaler.engine.leadership import IsLeader
from autoscaler.engine.notifying import Notices
from autoscaler.engine.staging_step import CycleInputs
from autoscaler.engine.warner import Warner


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
        may_act: IsLeader,
        notices: Notices,
    ) -> None:
        self._deactivator = Deactivator(
            cluster=cluster,
            actuator=actuator,
            policy=policy,
            clock=clock,
            logger=logger,
            guards=guards,
            may_act=may_act,
            notices=notices,
        )
        self._warner = Warner(
            cluster=cluster,
            actuator=actuator,
            policy=policy,
            logger=logger,
            notices=notices,
            may_act=may_act,
        )
        self._deleter = Deleter(
            cluster=cluster,
            actuator=actuator,
            policy=policy,
            logger=logger,
            guards=guards,
            notices=notices,
            may_act=may_act,
        )

    def act(self, inputs: CycleInputs, decisions: Sequence[Decision]) -> tuple[ActionRecord, ...]:
        return (
            self._deactivator.act(inputs, decisions)
            + self._warner.act(inputs, decisions)
            + self._deleter.act(inputs, decisions)
        )
