"""The emulated Kueue's flavor taints, each expected answer taken from a case of Kueue's
pkg/scheduler/flavorassigner/flavorassigner_test.go (TestAssignFlavors; its flavors
"tainted": instance=spot:NoSchedule, and "taint_and_toleration": the same taint with the
flavor's own toleration of it), one ResourceFlavor per ClusterQueue as the emulation keeps.
The objects are read by the test API server's reader (`tests/support/kueue_objects.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from autoscaler.domain.models import WorkloadRef
from autoscaler.sim import KueueState, LocalQueue, Phase, admit_pending
from autoscaler.sim.admission import pending_reason
from autoscaler.sim.flavors import Taint, Toleration, untolerated_taint
from tests.support.kueue_objects import cluster_queue_from_object, workload_from_object

from .builders import T0

REF = WorkloadRef("ns", "wl")
SPOT = {"key": "instance", "value": "spot", "effect": "NoSchedule"}
TOLERATES_SPOT = {**SPOT, "operator": "Equal"}
FLAVORS: dict[str, Any] = {
    "tainted": {"metadata": {"name": "tainted"}, "spec": {"nodeTaints": [SPOT]}},
    "taint_and_toleration": {
        "metadata": {"name": "taint_and_toleration"},
        "spec": {"nodeTaints": [SPOT], "tolerations": [TOLERATES_SPOT]},
    },
}


def queue(flavor: str) -> dict[str, Any]:
    resources = [{"name": "cpu", "nominalQuota": "4"}]
    group = {"coveredResources": ["cpu"], "flavors": [{"name": flavor, "resources": resources}]}
    return {"metadata": {"name": "test-clusterqueue"}, "spec": {"resourceGroups": [group]}}


def workload(*, cpu: str = "1", tolerations: list[dict[str, str]] | None = None) -> Any:
    pod = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if tolerations:
        pod["tolerations"] = tolerations
    obj = {
        "metadata": {"namespace": "ns", "name": "wl"},
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": pod}}],
        },
    }
    return workload_from_object(obj, priority_classes={}, now=T0)


def one_pass(flavor: str, **pod: Any) -> KueueState:
    state = (
        KueueState()
        .with_cluster_queue(cluster_queue_from_object(queue(flavor), flavors=FLAVORS))
        .with_local_queue(LocalQueue("ns", "lq", "test-clusterqueue"))
        .with_workload(workload(**pod))
    )
    return admit_pending(state, T0)[0]


@pytest.mark.parametrize(
    ("flavor", "tolerations"),
    [
        pytest.param("tainted", [TOLERATES_SPOT], id="single flavor, fits tainted flavor"),
        pytest.param(
            "taint_and_toleration", None, id="single flavor, fits tainted flavor with toleration"
        ),
    ],
)
def test_a_tolerated_taint_leaves_the_flavor_to_the_pod_set(
    flavor: str, tolerations: list[dict[str, str]] | None
) -> None:
    state = one_pass(flavor, tolerations=tolerations)
    admitted = state.workload(REF)
    assert admitted.phase is Phase.ADMITTED
    assert admitted.admission is not None and dict(admitted.admission.usage) == {"cpu": 1000}


def test_an_untolerated_taint_rules_the_flavor_out_whatever_its_free_quota() -> None:
    # "multiple flavors, fits while skipping tainted flavor": the attempt on "tainted" is
    # NoFit with this reason although its 4 CPUs are free (the emulation has no second flavor
    # to fall back to, so the workload stays pending with Kueue's reason).
    state = one_pass("tainted", cpu="3")
    assert state.workload(REF).phase is Phase.PENDING
    reason = pending_reason(state, REF)
    assert reason == (
        "couldn't assign flavors to pod set main: "
        "untolerated taint {instance spot NoSchedule <nil>} in flavor tainted"
    )


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        # "succeeds to schedule on flavor-b with a tolerated taint" (key=val:NoSchedule, Equal)
        pytest.param(Toleration("key", "Equal", "val", "NoSchedule"), True, id="equal"),
        pytest.param(Toleration("key", "Exists"), True, id="exists-any-effect"),
        pytest.param(Toleration("key", "Equal", "other", "NoSchedule"), False, id="other-value"),
        pytest.param(Toleration("key", "Exists", effect="NoExecute"), False, id="other-effect"),
        pytest.param(Toleration("", "Exists"), True, id="empty-key-exists-tolerates-all"),
    ],
)
def test_tolerations_match_taints_as_kubernetes_tolerates_them(
    toleration: Toleration, tolerated: bool
) -> None:
    taint = Taint("key", "val", "NoSchedule")
    assert (untolerated_taint([taint], [toleration]) is None) is tolerated


def test_a_prefer_no_schedule_taint_never_rules_a_flavor_out() -> None:
    assert untolerated_taint([Taint("key", "val", "PreferNoSchedule")], []) is None


def test_gt_and_lt_compare_the_values_as_integers() -> None:
    taint = Taint("gpu-gen", "5", "NoSchedule")
    assert untolerated_taint([taint], [Toleration("gpu-gen", "Gt", "4")]) is None
    assert untolerated_taint([taint], [Toleration("gpu-gen", "Lt", "4")]) == taint
    assert untolerated_taint([taint], [Toleration("gpu-gen", "Gt", "x")]) == taint
