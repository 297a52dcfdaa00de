"""The chart's replicas and leader election: two pods and a leader by default, one pod without a
leader when asked, each pod named in the Lease, and combinations that would act twice or block
drains refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.tooling import (
    CHART,
    NAMESPACE,
    RELEASE,
    VALUE_SETS,
    find,
    one,
    render,
    render_release,
    settings_from,
    template_result,
    the_container,
    values_args,
)

HIGH_AVAILABILITY = CHART / "ci" / "high-availability-values.yaml"
SINGLE_REPLICA = CHART / "ci" / "single-replica-values.yaml"


@pytest.mark.real
@pytest.mark.parametrize("values_file", VALUE_SETS)
def test_each_pod_is_named_in_the_lease_by_the_downward_api(values_file: Path | None) -> None:
    env = {e["name"]: e for e in the_container(render(*values_args(values_file)))["env"]}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}


@pytest.mark.real
def test_a_single_replica_rolled_by_recreate_needs_no_leader_nor_budget(tmp_path: Path) -> None:
    manifests = render(*values_args(SINGLE_REPLICA))
    deployment = one(manifests, "Deployment")["spec"]
    assert deployment["replicas"] == 1
    assert deployment["strategy"] == {"type": "Recreate"}  # the defaults' rollingUpdate dropped
    assert find(manifests, "PodDisruptionBudget") == []
    assert settings_from(manifests, tmp_path).leader_election.enabled is False


@pytest.mark.real
@pytest.mark.parametrize(
    "values_file",
    [
        pytest.param(None, id="defaults"),
        pytest.param(HIGH_AVAILABILITY, id="high-availability-values"),
    ],
)
def test_two_replicas_elect_a_leader_roll_one_by_one_and_survive_a_drain(
    values_file: Path | None, tmp_path: Path
) -> None:
    manifests = render(*values_args(values_file))
    deployment = one(manifests, "Deployment")["spec"]
    assert deployment["replicas"] == 2
    assert deployment["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }
    budget = one(manifests, "PodDisruptionBudget")["spec"]
    assert budget["minAvailable"] == 1 and "maxUnavailable" not in budget
    assert budget["selector"]["matchLabels"] == deployment["selector"]["matchLabels"]
    election = settings_from(manifests, tmp_path).leader_election
    assert election.enabled and election.lease_name == RELEASE


@pytest.mark.real
def test_the_lease_is_named_after_the_release(tmp_path: Path) -> None:
    manifests = render_release("gpu-reclaimer", NAMESPACE, "--set", "leaderElection.enabled=true")
    election = settings_from(manifests, tmp_path).leader_election
    assert election.lease_name == "gpu-reclaimer-idle-gpu-autoscaler"


@pytest.mark.real
def test_the_role_lets_replicas_take_and_renew_the_lease() -> None:
    role = one(render(*values_args(HIGH_AVAILABILITY)), "Role", RELEASE)  # the release's own
    lease_rules = [r for r in role["rules"] if r["resources"] == ["leases"]]
    lease = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"]}
    assert lease_rules == [
        {**lease, "verbs": ["create"]},
        {**lease, "resourceNames": [RELEASE], "verbs": ["get", "update"]},
    ]


@pytest.mark.real
def test_set_election_timings_reach_the_service(tmp_path: Path) -> None:
    manifests = render(*values_args(CHART / "ci" / "all-optional-on-values.yaml"))
    election = settings_from(manifests, tmp_path).leader_election
    assert election.lease_name == "gpu-reclaimer-leader"
    timings = (election.lease_duration, election.renew_deadline, election.retry_period)
    assert [t.total_seconds() for t in timings] == [20, 15, 3]


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        pytest.param(
            ("--set", "leaderElection.enabled=false"),
            "replicaCount 2 needs leaderElection.enabled=true",
            id="default-replicas-without-a-leader",
        ),
        pytest.param(
            (*values_args(SINGLE_REPLICA), "--set", "updateStrategy.type=RollingUpdate"),
            "RollingUpdate runs the old and the new pod side by side",
            id="rolling-update-without-a-leader",
        ),
        pytest.param(
            ("--set", "replicaCount=1"),
            "minAvailable 1 with replicaCount 1 would block every node drain",
            id="default-budget-with-one-replica",
        ),
    ],
)
def test_combinations_that_act_twice_or_block_drains_fail(
    args: tuple[str, ...], complaint: str
) -> None:
    code, _, err = template_result(*args)
    assert code != 0
    assert complaint in err, err


@pytest.mark.real
def test_a_single_replica_budget_may_allow_one_pod_down() -> None:
    args = (
        *values_args(SINGLE_REPLICA),
        "--set",
        "podDisruptionBudget.enabled=true",
        "--set",
        "podDisruptionBudget.maxUnavailable=1",
    )
    budget = one(render(*args), "PodDisruptionBudget")["spec"]
    assert budget["maxUnavailable"] == 1 and "minAvailable" not in budget


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        pytest.param(
            ("--set", "leaderElection.leaseDuration=1.5s"),
            "/leaderElection/leaseDuration",
            id="lease-duration-not-whole-seconds",
        ),
        pytest.param(
            ("--set", "leaderElection.retryPeriod=0s"),
            "/leaderElection/retryPeriod",
            id="zero-retry-period",
        ),
        pytest.param(
            ("--set", "leaderElection.leaseName=Leader_Lease"),
            "/leaderElection/leaseName",
            id="lease-name-not-a-dns-name",
        ),
        pytest.param(
            ("--set", "leaderElection.namespace=other"),
            "additional properties 'namespace' not allowed",
            id="lease-lives-in-the-release-namespace",
        ),
        pytest.param(
            ("--set", "config.watchCache.backoffMax=soon"),
            "/config/watchCache/backoffMax",
            id="bad-watch-cache-duration",
        ),
        pytest.param(
            ("--set", "podDisruptionBudget.minAvailable=half"),
            "/podDisruptionBudget/minAvailable",
            id="budget-neither-count-nor-percentage",
        ),
    ],
)
def test_schema_rejects_a_bad_election_value(args: tuple[str, ...], complaint: str) -> None:
    code, _, err = template_result(*args)
    assert code != 0
    assert complaint in err, err
