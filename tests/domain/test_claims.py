"""Whose a RayCluster is (domain/policy/claims.py), as a decision table: only a RayCluster no
queueing system admits, no other object controls, and whose actuator is enabled is ours to
suspend; Kueue's is recognised by its Workload even without any label."""

from __future__ import annotations

import pytest

from autoscaler.domain.models import OwnerRef
from autoscaler.domain.policy.claims import Claim, RayClusterFacts, claim
from autoscaler.domain.policy.management import Manager

BOTH = frozenset({Manager.KUEUE, Manager.KAI, Manager.KUBERAY})
KAI_LABEL = {"kai.scheduler/queue": "team-a"}
RAYJOB = OwnerRef("ray.io/v1", "RayJob", "nightly", "uid-job")
APPWRAPPER = OwnerRef("workload.codeflare.dev/v1beta2", "AppWrapper", "aw", "uid-aw")


def facts(
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    controller: OwnerRef | None = None,
    workload: str | None = None,
) -> RayClusterFacts:
    return RayClusterFacts(
        labels=labels or {},
        annotations=annotations or {},
        controller=controller,
        admitting_workload=workload,
    )


ROWS = [
    pytest.param(
        facts(workload="raycluster-rc-1a2b3"),
        BOTH,
        None,
        "Workload raycluster-rc-1a2b3 admits it",
        id="an-unlabelled-raycluster-a-workload-references-is-kueues",
    ),
    pytest.param(
        facts(labels=KAI_LABEL, workload="raycluster-rc-1a2b3"),
        BOTH,
        None,
        "Workload raycluster-rc-1a2b3 admits it",
        id="a-workload-wins-over-kai-labels",
    ),
    pytest.param(
        facts(labels={"kueue.x-k8s.io/queue-name": "user-queue"}),
        BOTH,
        None,
        "kueue.x-k8s.io/queue-name (no Workload yet)",
        id="kueues-queue-label-without-a-workload-yet-is-still-kueues",
    ),
    pytest.param(
        facts(annotations={"kueue.x-k8s.io/workload": "x"}, labels=KAI_LABEL),
        BOTH,
        None,
        "kueue.x-k8s.io/workload",
        id="any-kueue-mark-makes-it-kueues-even-with-kai-labels",
    ),
    pytest.param(
        facts(controller=RAYJOB),
        BOTH,
        None,
        "controlled by RayJob nightly",
        id="a-rayjobs-raycluster-is-never-suspended-on-its-own",
    ),
    pytest.param(
        facts(controller=APPWRAPPER, labels=KAI_LABEL),
        BOTH,
        None,
        "controlled by AppWrapper aw",
        id="an-appwrappers-raycluster-is-never-suspended-on-its-own",
    ),
    pytest.param(
        facts(labels=KAI_LABEL), BOTH, Manager.KAI, "queue team-a", id="kai-labelled-is-kais"
    ),
    pytest.param(
        facts(labels=KAI_LABEL),
        frozenset({Manager.KUEUE, Manager.KUBERAY}),
        None,
        "the kai actuator is not enabled",
        id="kai-labelled-with-kai-off-is-left-alone-not-taken-as-plain",
    ),
    pytest.param(facts(), BOTH, Manager.KUBERAY, "plain KubeRay", id="unlabelled-is-plain"),
    pytest.param(
        facts(),
        frozenset({Manager.KUEUE}),
        None,
        "the kuberay actuator is not enabled",
        id="plain-with-suspend-off-is-left-alone",
    ),
]


@pytest.mark.parametrize(("given", "enabled", "manager", "reason_part"), ROWS)
def test_who_claims_a_raycluster(
    given: RayClusterFacts, enabled: frozenset[Manager], manager: Manager | None, reason_part: str
) -> None:
    found = claim(given, enabled=enabled)
    assert found.manager == manager
    assert reason_part in found.reason


def test_only_a_controlled_raycluster_is_reported_as_owned_elsewhere() -> None:
    assert claim(facts(controller=RAYJOB), enabled=BOTH).owned_elsewhere
    kueues = [facts(workload="w"), facts(labels={"kueue.x-k8s.io/queue-name": "q"})]
    assert not any(claim(f, enabled=BOTH).owned_elsewhere for f in kueues)
    assert claim(facts(), enabled=BOTH) == Claim(
        Manager.KUBERAY, "plain KubeRay: no Kueue Workload, no KAI queue"
    )
