"""`serve` wires one actuator per enabled manager and reads Kueue only while its actuator is
on; with no suspend actuator, the RayCluster source is never asked."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest

from autoscaler.compose.serve import build_actuator, build_cluster, build_pending, build_reader
from autoscaler.core.errors import ClusterError
from autoscaler.domain.management import Manager
from autoscaler.settings.tree import Settings
from tests.support.domain_builders import a_workload
from tests.support.kube_server import KubeServer
from tests.support.ray_rig import FixedClock, client_of

LOG = logging.getLogger("tests.kuberay.compose")


def settings_with(actuators: dict[str, Any]) -> Settings:
    return Settings.model_validate({"actuators": actuators, "watchCache": {"enabled": False}})


def writable(actuator: Any, manager: Manager) -> bool:
    """Whether the actuator has a writer for this manager's workloads."""
    try:
        actuator.writes_owner(replace(a_workload("team-a", "rc").build(), manager=manager))
    except ClusterError:
        return False
    return True


@pytest.mark.parametrize(
    ("actuators", "expected"),
    [
        pytest.param({}, {Manager.KUEUE}, id="defaults-kueue-only"),
        pytest.param({"kai": {"enabled": True}}, {Manager.KUEUE, Manager.KAI}, id="kueue-and-kai"),
        pytest.param(
            {"kueue": {"enabled": False}, "kuberay": {"enabled": True}},
            {Manager.KUBERAY},
            id="plain-kuberay-only",
        ),
    ],
)
def test_each_enabled_manager_gets_its_actuator_and_no_other(
    kube_server: KubeServer, actuators: dict[str, Any], expected: set[Manager]
) -> None:
    settings = settings_with(actuators)
    client = client_of(kube_server)
    cluster = build_cluster(settings, client)
    actuator = build_actuator(settings, client=client, cluster=cluster, clock=FixedClock())
    assert {manager for manager in Manager if writable(actuator, manager)} == expected


def test_with_kueue_off_neither_workloads_nor_queues_are_read(kube_server: KubeServer) -> None:
    settings = settings_with({"kueue": {"enabled": False}, "kai": {"enabled": True}})
    client = client_of(kube_server)
    cluster = build_cluster(settings, client)
    reader = build_reader(settings, client=client, kueue=cluster, logger=LOG)
    assert not cluster.reads_kueue
    assert build_pending(cluster, client=client, logger=LOG) is None
    assert reader.reads_rayclusters
