"""`serve` wires one actuator per enabled manager and reads Kueue only while its actuator is
on; with no suspend actuator, the RayCluster source is never asked."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest

from autoscaler.adapters.kai.queues import KaiQueues
from autoscaler.compose.kueue_presence import refuse_kueue_off_beside_kueue
from autoscaler.compose.managers import build_actuator, build_pending
from autoscaler.compose.serve import build_cluster, build_reader, build_replica
from autoscaler.core.errors import ClusterError, ConfigError
from autoscaler.domain.policy.management import Manager
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
    pending = build_pending(settings, client=client, objects=cluster, logger=LOG)
    assert isinstance(pending, KaiQueues)  # who waits under KAI only: no Kueue queue read
    assert reader.reads_rayclusters


KUEUE_OFF = {"kueue": {"enabled": False}, "kai": {"enabled": True}}


def test_kueue_off_beside_a_suspend_actuator_is_refused_where_kueue_is_served(
    kube_server: KubeServer,
) -> None:
    """An unlabelled RayCluster Kueue admits would be taken for a KAI or plain one."""
    with pytest.raises(ConfigError, match=r"actuators\.kueue\.enabled: false, but the cluster"):
        build_replica(
            settings_with(KUEUE_OFF),
            client=client_of(kube_server),
            clock=FixedClock(),
            logger=LOG,
            elector=None,
        )


@pytest.mark.parametrize(
    ("status", "refused"),
    [
        pytest.param(404, False, id="kueue-not-installed-is-fine"),
        pytest.param(503, True, id="discovery-failing-is-refused-too"),
    ],
)
def test_kueue_off_is_allowed_only_where_kueue_is_surely_not_served(
    kube_server: KubeServer, status: int, refused: bool
) -> None:
    kube_server.faults.fail_next("GET", "/apis/kueue.x-k8s.io", status=status)
    try:
        refuse_kueue_off_beside_kueue(settings_with(KUEUE_OFF), client_of(kube_server))
    except ConfigError as exc:
        assert refused, exc
        assert "is unknown" in str(exc)
    else:
        assert not refused
    finally:
        kube_server.faults.clear()


def test_with_kueues_actuator_on_nothing_is_asked(kube_server: KubeServer) -> None:
    kube_server.requests.clear()
    refuse_kueue_off_beside_kueue(settings_with({"kai": {"enabled": True}}), client_of(kube_server))
    assert kube_server.requests.matching(path_prefix="/apis/kueue.x-k8s.io") == []
