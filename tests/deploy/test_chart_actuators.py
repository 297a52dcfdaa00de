"""The chart's `config.actuators` (ISSUE 17): RBAC grows only with the actuators enabled.

With the suspend actuators (KAI, KubeRay) off the chart renders exactly the RBAC it rendered
before ISSUE 17 (tests/deploy/golden/), so no RayCluster patch is granted beyond today's; KAI's
actuator adds only the reads of its Queues and PodGroups; without Kueue's no kueue.x-k8s.io
rule is left. Every render validates, and the settings the service loads say the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.adapters.kubernetes.resources import (
    KAI_READS,
    KUEUE_CONFIG_READS,
    SCALE_UP_READS,
)
from autoscaler.domain.policy.management import Manager
from tests.deploy.rbac_golden import GOLDEN_RENDERS, golden, rbac_summary
from tests.deploy.test_rbac_matches_client import Call, granted, own_roles
from tests.deploy.tooling import find, notes, render, settings_from, template_result
from tests.deploy.validation import describe, problems

KAI_ON = ("--set", "config.actuators.kai.enabled=true")
KUBERAY_ON = ("--set", "config.actuators.kuberay.enabled=true")
KUEUE_OFF = ("--set", "config.actuators.kueue.enabled=false")
SUSPEND_OFF = (
    "--set",
    "config.actuators.kai.enabled=false",
    "--set",
    "config.actuators.kuberay.enabled=false",
)
INCLUDE = ("--set", "config.policy.namespaces.include={team-a,team-b}")
KUEUE_GROUPS = ("kueue.x-k8s.io", "visibility.kueue.x-k8s.io")


def grants(*args: str) -> set[Call]:
    return granted(own_roles(render(*args)))


@pytest.mark.real
@pytest.mark.parametrize(
    "args",
    [
        pytest.param((), id="defaults"),
        pytest.param(SUSPEND_OFF, id="suspend-actuators-said-off"),
        pytest.param(KUBERAY_ON, id="kuberay-on-needs-nothing-new"),
    ],
)
@pytest.mark.parametrize("golden_name", sorted(GOLDEN_RENDERS))
def test_rbac_without_kais_actuator_is_exactly_todays(
    golden_name: str, args: tuple[str, ...]
) -> None:
    """The suspend actuators write only a RayCluster's spec.suspend and annotations, which the
    RayCluster owner kind is already granted, so RBAC stays today's, the RayCluster patch
    included; KubeRay's actuator reads nothing more either."""
    rendered = render(*GOLDEN_RENDERS[golden_name], *args)
    assert rbac_summary(rendered) == golden(golden_name)


@pytest.mark.real
@pytest.mark.parametrize(
    "args",
    [pytest.param((), id="cluster-wide"), pytest.param(INCLUDE, id="role-per-namespace")],
)
def test_kais_actuator_adds_exactly_the_reads_of_its_queues_and_podgroups(
    args: tuple[str, ...],
) -> None:
    assert {(group, plural) for group, plural, _ in KAI_READS} == {
        ("scheduling.run.ai", "queues"),
        ("scheduling.run.ai", "podgroups"),
    }
    manifests = render(*args, *KAI_ON)
    assert grants(*args, *KAI_ON) - grants(*args) == KAI_READS
    assert grants(*args) - grants(*args, *KAI_ON) == set()
    (cluster_role,) = find(manifests, "ClusterRole")  # Queues are cluster-scoped
    assert granted([cluster_role]) >= KAI_READS


@pytest.mark.real
@pytest.mark.parametrize(
    "args",
    [
        pytest.param(KAI_ON, id="kai-only-cluster-wide"),
        pytest.param((*KAI_ON, *INCLUDE), id="kai-only-role-per-namespace"),
        pytest.param(KUBERAY_ON, id="kuberay-only"),
    ],
)
def test_without_kueues_actuator_no_kueue_rule_is_left(args: tuple[str, ...]) -> None:
    with_kueue = grants(*args)
    without = grants(*args, *KUEUE_OFF)
    assert {call for call in without if call[0] in KUEUE_GROUPS} == set()
    # the core reads made with Kueue's Workloads only: scale-up Events, Kueue's Configuration
    with_workloads = SCALE_UP_READS | KUEUE_CONFIG_READS
    assert (
        with_kueue - without
        == {call for call in with_kueue if call[0] in KUEUE_GROUPS} | with_workloads
    )
    assert ("ray.io", "rayclusters", "patch") in without  # the suspend actuator still writes


@pytest.mark.real
@pytest.mark.parametrize(
    "args",
    [
        pytest.param(KAI_ON, id="kai-on"),
        pytest.param((*KAI_ON, *KUEUE_OFF), id="kai-only"),
        pytest.param((*KUBERAY_ON, *KUEUE_OFF, *INCLUDE), id="kuberay-only-per-namespace"),
    ],
)
def test_every_render_with_actuators_validates(args: tuple[str, ...]) -> None:
    invalid = {describe(m): found for m in render(*args) if (found := problems(m))}
    assert invalid == {}


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "enabled"),
    [
        pytest.param((), {Manager.KUEUE}, id="defaults-kueue-only"),
        pytest.param(
            (*KAI_ON, *KUBERAY_ON), {Manager.KUEUE, Manager.KAI, Manager.KUBERAY}, id="all-three"
        ),
        pytest.param((*KAI_ON, *KUEUE_OFF), {Manager.KAI}, id="kai-only"),
    ],
)
def test_the_service_loads_the_actuators_the_values_enable(
    args: tuple[str, ...], enabled: set[Manager], tmp_path: Path
) -> None:
    settings = settings_from(render(*args), tmp_path)
    assert settings.actuators.enabled() == frozenset(enabled)


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            KUEUE_OFF,
            "config.actuators: every actuator is disabled",
            id="no-actuator-enabled",
        ),
        pytest.param(
            (*KUBERAY_ON, "--set", "config.cluster.ownerKinds.RayCluster.enabled=false"),
            "config.actuators.kuberay.enabled: its rows are RayClusters, but "
            "config.cluster.ownerKinds.RayCluster.enabled is false",
            id="suspend-actuator-without-the-raycluster-owner-kind",
        ),
    ],
)
def test_actuator_settings_the_service_would_refuse_fail_the_install(
    args: tuple[str, ...], message: str
) -> None:
    code, _, err = template_result(*args)
    assert code != 0
    assert message in err


@pytest.mark.real
def test_notes_say_which_rayclusters_are_suspended_and_what_is_patched() -> None:
    assert "Suspend actuators" not in notes()
    kai_only = notes(*KAI_ON, *KUEUE_OFF)
    assert "KAI Scheduler's (label kai.scheduler/queue)" in kai_only
    assert "ClusterRole lets it patch RayClusters in every namespace" in kai_only
