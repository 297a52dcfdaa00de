"""One actuator over several (engine/acting/by_manager.py): each workload is written by its own
manager's actuator; one whose manager has none enabled, or one marked hands-off, is refused
(a Conflict: the REST 409) before any write."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

import pytest

from autoscaler.core.errors import Conflict
from autoscaler.domain.annotations import DeactivationAudit
from autoscaler.domain.models import State, WorkloadInfo
from autoscaler.domain.policy.management import HandsOff, Manager
from autoscaler.engine.acting.by_manager import ActuatorByManager
from tests.support.domain_builders import NOW, a_workload
from tests.support.fakes import FakeCluster

AUDIT = DeactivationAudit(at=NOW, reason="idle", peak=0.0, threshold=0.05, policy="test")


def row(manager: Manager) -> WorkloadInfo:
    return replace(a_workload("team-a", f"rc-{manager}").gpu_pod("w-0").build(), manager=manager)


def test_each_workload_goes_to_its_managers_actuator() -> None:
    kueue_row, kai_row = row(Manager.KUEUE), row(Manager.KAI)
    kueue, suspend = FakeCluster([kueue_row]), FakeCluster([kai_row])
    actuator = ActuatorByManager({Manager.KUEUE: kueue, Manager.KAI: suspend})
    actuator.deactivate(kueue_row, AUDIT)
    actuator.deactivate(kai_row, AUDIT)
    actuator.reactivate(kai_row, {})
    assert kueue.calls == [("deactivate", kueue_row.ref)]
    assert suspend.calls == [("deactivate", kai_row.ref), ("reactivate", kai_row.ref)]


def test_a_workload_whose_manager_has_no_actuator_is_refused_and_nothing_written() -> None:
    kueue = FakeCluster([])
    actuator = ActuatorByManager({Manager.KUEUE: kueue})
    with pytest.raises(Conflict, match="no kuberay actuator is enabled"):
        actuator.deactivate(row(Manager.KUBERAY), AUDIT)
    with pytest.raises(Conflict, match="no kuberay actuator"):
        actuator.annotate_workload(row(Manager.KUBERAY), {"a": "b"})
    assert kueue.calls == []


RAYJOBS = HandsOff(State.PROTECTED, "owned by RayJob train: the RayJob's to stop")
FRACTIONAL = HandsOff(State.UNSUPPORTED, "KAI fractional GPUs (gpu-fraction 0.5 on pod p)")


@pytest.mark.parametrize(
    ("manager", "hands_off"),
    [
        pytest.param(Manager.KUBERAY, RAYJOBS, id="rayjob-owned-raycluster"),
        pytest.param(Manager.KAI, FRACTIONAL, id="kai-fractional-gpus"),
    ],
)
@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda actuator, info: actuator.deactivate(info, AUDIT), id="deactivate"),
        pytest.param(lambda actuator, info: actuator.delete_owner(info), id="delete-owner"),
    ],
)
def test_a_hands_off_workload_is_never_stopped_nor_deleted_and_nothing_written(
    manager: Manager, hands_off: HandsOff, call: Callable[[ActuatorByManager, WorkloadInfo], None]
) -> None:
    info = replace(row(manager), hands_off=hands_off)
    suspend = FakeCluster([info])
    actuator = ActuatorByManager({manager: suspend})
    with pytest.raises(Conflict, match=re.escape(f"{info.ref}: {hands_off.reason}")):
        call(actuator, info)
    assert suspend.calls == []
