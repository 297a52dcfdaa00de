"""The chart grants exactly the Kubernetes calls the client module may make, and nothing more.

autoscaler/adapters/kubernetes/client.py refuses any call whose (group, resource, verb) is not in
ALLOWED_CALLS; the chart's Roles and ClusterRoles must grant that set exactly (less what the
install turns off: patches on owner kinds that are not enabled, the Lease without leader
election), and limit the NAMED_CALLS to the object the rendered settings name, so a new call
cannot ship without its RBAC, and no permission outlives the code that used it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from autoscaler.adapters.kubernetes.resources import (
    ALLOWED_CALLS,
    KUEUE_CONFIG_READS,
    NAMED_CALLS,
    SCALE_UP_READS,
)
from autoscaler.adapters.kueue.resources import OWNER_RESOURCES
from autoscaler.domain.policy.management import MANAGERS, Manager
from autoscaler.settings.tree import Settings
from tests.deploy.tooling import (
    CI_VALUES,
    NAMESPACE,
    RELEASE,
    Manifest,
    find,
    notes,
    render,
    settings_from,
    values_args,
)

VALUE_SETS = [pytest.param(None, id="defaults")] + [
    pytest.param(path, id=path.stem) for path in CI_VALUES
]
# Namespaced on purpose: the runtime-state ConfigMap and the Lease live in the release namespace.
RELEASE_NAMESPACE_ONLY = {("", "configmaps"), ("coordination.k8s.io", "leases")}
# The writes on workloads: cluster-wide, or in a Role per namespace named in `include`.
WORKLOAD_WRITES = {
    ("kueue.x-k8s.io", "workloads", "patch"),
    ("ray.io", "rayclusters", "patch"),
    ("", "events", "create"),
}
INCLUDE = ("--set", "config.policy.namespaces.include={team-a,team-b}")
DELETE_RAY_CLUSTERS = ("ray.io", "rayclusters", "delete")
# The API groups only one actuator reads or writes.
ACTUATOR_GROUPS = {
    Manager.KUEUE: ("kueue.x-k8s.io", "visibility.kueue.x-k8s.io"),
    Manager.KAI: ("scheduling.run.ai",),
}

Call = tuple[str, str, str]
Grant = tuple[str, str, str, tuple[str, ...]]


def granted(roles: list[Manifest]) -> set[Call]:
    return {call[:3] for call in granted_by_name(roles)}


def granted_by_name(roles: list[Manifest]) -> set[Grant]:
    """Every (group, resource, verb, resourceNames) the roles grant."""
    return {
        (group, resource, verb, tuple(sorted(rule.get("resourceNames") or ())))
        for role in roles
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def expected_grants(settings: Settings) -> set[Grant]:
    """ALLOWED_CALLS as this install needs them, NAMED_CALLS limited to the settings' names."""
    kinds = settings.cluster.owner_kinds
    off = {
        (resource.group, resource.plural, "patch")
        for kind, resource in OWNER_RESOURCES.items()
        if kind not in kinds or not kinds[kind].enabled
    }
    if not settings.leader_election.enabled:
        off |= {call for call in ALLOWED_CALLS if call[1] == "leases"}
    if not any(rule.action == "delete" for rule in settings.rules):
        off.add(DELETE_RAY_CLUSTERS)  # only a rule with action delete (opt-in) may delete
    off |= actuator_calls_off(settings)
    values = settings.model_dump(by_alias=True)
    return {
        (*call, (setting_at(values, NAMED_CALLS[call]),) if call in NAMED_CALLS else ())
        for call in ALLOWED_CALLS - off
    }


def actuator_calls_off(settings: Settings) -> set[Call]:
    """The calls only an actuator that is not enabled makes: Kueue's objects without Kueue's
    actuator, KAI Scheduler's without KAI's (docs/ACTUATORS.md, RBAC per actuator)."""
    enabled = settings.actuators.enabled()
    off_groups = {
        group
        for manager, groups in ACTUATOR_GROUPS.items()
        if manager not in enabled
        for group in groups
    }
    off = {call for call in ALLOWED_CALLS if call[0] in off_groups}
    if Manager.KUEUE not in enabled:  # read with Kueue's Workloads only
        off |= SCALE_UP_READS | KUEUE_CONFIG_READS
    return off


def setting_at(values: dict[str, Any], dotted: str) -> str:
    for key in dotted.split("."):
        values = values[key]
    assert isinstance(values, str)
    return values


def own_roles(manifests: list[Manifest]) -> list[Manifest]:
    return find(manifests, "ClusterRole") + find(manifests, "Role")


def release_role(manifests: list[Manifest]) -> Manifest:
    """The Role of the release itself (the others: Kueue's Configuration, per-namespace
    writes)."""
    (role,) = [r for r in find(manifests, "Role") if r["metadata"]["name"] == RELEASE]
    return role


@pytest.mark.real
@pytest.mark.parametrize("values_file", VALUE_SETS)
def test_rendered_roles_grant_exactly_the_calls_the_client_allows(
    values_file: Path | None, tmp_path: Path
) -> None:
    manifests = render(*values_args(values_file))
    expected = expected_grants(settings_from(manifests, tmp_path))
    assert granted_by_name(own_roles(manifests)) == expected


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "granted_calls"),
    [
        pytest.param((), set(), id="owner-kinds-off-by-default"),
        pytest.param(
            ("--set", "config.cluster.ownerKinds.RayJob.enabled=true"),
            {("ray.io", "rayjobs", "patch")},
            id="rayjob-on",
        ),
        # Jobs, StatefulSets and Deployments are Kubernetes' own controllers' (pods too):
        # read when enabled, never written, so never granted patch
        pytest.param(
            (
                *("--set", "config.cluster.ownerKinds.Job.enabled=true"),
                *("--set", "config.cluster.ownerKinds.StatefulSet.enabled=true"),
                *("--set", "config.cluster.ownerKinds.Deployment.enabled=true"),
            ),
            set(),
            id="job-statefulset-deployment-on-never-patched",
        ),
    ],
)
def test_owner_kinds_are_patched_only_when_enabled(
    args: tuple[str, ...], granted_calls: set[Call]
) -> None:
    optional = {
        ("ray.io", "rayjobs", "patch"),
        ("batch", "jobs", "patch"),
        ("apps", "statefulsets", "patch"),
        ("apps", "deployments", "patch"),
    }
    assert granted(own_roles(render(*args))) & optional == granted_calls


@pytest.mark.real
def test_state_and_lease_permissions_stay_in_the_release_namespace() -> None:
    manifests = render()
    cluster_wide = {(g, r) for g, r, _ in granted(find(manifests, "ClusterRole"))}
    assert not cluster_wide & RELEASE_NAMESPACE_ONLY
    role = release_role(manifests)
    assert role["metadata"]["namespace"] == NAMESPACE
    assert {(g, r) for g, r, _ in granted([role])} == RELEASE_NAMESPACE_ONLY


@pytest.mark.real
@pytest.mark.parametrize(
    ("resource", "name"),
    [
        pytest.param("configmaps", f"{RELEASE}-state", id="state-config-map"),
        pytest.param("leases", RELEASE, id="lease"),
    ],
)
def test_only_create_is_granted_without_the_objects_name(resource: str, name: str) -> None:
    role = release_role(render())
    rules = [rule for rule in role["rules"] if rule["resources"] == [resource]]
    assert {tuple(rule["verbs"]): rule.get("resourceNames") for rule in rules} == {
        ("create",): None,
        ("get", "update"): [name],
    }


@pytest.mark.real
def test_a_lease_name_from_values_is_the_one_granted() -> None:
    role = release_role(render("--set", "leaderElection.leaseName=my-lease"))
    names = [rule.get("resourceNames") for rule in role["rules"] if rule["resources"] == ["leases"]]
    assert names == [None, ["my-lease"]]


@pytest.mark.real
def test_without_leader_election_no_lease_is_granted() -> None:
    args = ("--values", str(next(p for p in CI_VALUES if p.stem == "single-replica-values")))
    assert not {r for _, r, _ in granted(own_roles(render(*args)))} & {"leases"}


@pytest.mark.real
def test_named_namespaces_get_a_role_each_and_the_cluster_role_keeps_only_reads() -> None:
    manifests = render(*INCLUDE)
    (cluster_role,) = find(manifests, "ClusterRole")
    assert not granted([cluster_role]) & WORKLOAD_WRITES
    roles = [r for r in find(manifests, "Role") if r["metadata"]["name"].endswith("-workloads")]
    assert {r["metadata"]["namespace"]: granted([r]) for r in roles} == {
        "team-a": WORKLOAD_WRITES,
        "team-b": WORKLOAD_WRITES,
    }
    bindings = {
        b["metadata"]["namespace"]: (b["roleRef"]["name"], b["subjects"][0]["namespace"])
        for b in find(manifests, "RoleBinding")
        if b["metadata"]["name"].endswith("-workloads")
    }
    workloads_role = f"{RELEASE}-workloads"
    assert bindings == {ns: (workloads_role, NAMESPACE) for ns in ("team-a", "team-b")}


@pytest.mark.real
def test_named_namespaces_still_list_and_watch_pods_cluster_wide() -> None:
    """The pod cache and the Workload list are one cluster-wide call each (the adapter filters
    namespaces itself), so the reads cannot move into the per-namespace Roles."""
    (cluster_role,) = find(render(*INCLUDE), "ClusterRole")
    assert {("", "pods", "list"), ("", "pods", "watch")} <= granted([cluster_role])


@pytest.mark.real
def test_notes_say_where_the_service_may_write() -> None:
    assert "ClusterRole lets it patch Workloads in every namespace" in notes()
    assert "only in the namespaces team-a, team-b" in notes(*INCLUDE)


@pytest.mark.real
@pytest.mark.parametrize("values_file", VALUE_SETS)
def test_no_wildcards_and_no_borrowed_admin_roles(values_file: Path | None) -> None:
    manifests = render(*values_args(values_file))
    for rule in (rule for role in own_roles(manifests) for rule in role["rules"]):
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field]
        assert "nonResourceURLs" not in rule
    bound = {
        binding["roleRef"]["name"]
        for binding in find(manifests, "ClusterRoleBinding") + find(manifests, "RoleBinding")
    }
    own = {role["metadata"]["name"] for role in own_roles(manifests)}
    assert bound - own <= {"cluster-monitoring-view"}


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "bound"),
    [
        pytest.param((), False, id="off-by-default"),
        pytest.param(("--set", "rbac.clusterMonitoringView=true"), True, id="on-when-asked"),
    ],
)
def test_cluster_monitoring_view_is_bound_only_when_asked(
    args: tuple[str, ...], bound: bool
) -> None:
    names = {m["roleRef"]["name"] for m in find(render(*args), "ClusterRoleBinding")}
    assert ("cluster-monitoring-view" in names) is bound


def test_the_managers_table_names_the_api_groups_only_its_actuator_calls() -> None:
    """What the chart leaves out with an actuator off is what the managers' table says."""
    from_table = {manager: row.api_groups for manager, row in MANAGERS.items() if row.api_groups}
    assert from_table == ACTUATOR_GROUPS


@pytest.mark.real
@pytest.mark.parametrize(
    ("args", "namespace", "name"),
    [
        pytest.param((), "kueue-system", "kueue-manager-config", id="defaults"),
        pytest.param(
            (
                "--set",
                "config.cluster.kueueConfiguration.namespace=kueue",
                "--set",
                "config.cluster.kueueConfiguration.name=kueue-config",
            ),
            "kueue",
            "kueue-config",
            id="from-values",
        ),
        pytest.param(
            (
                "--set",
                "config.actuators.kueue.enabled=false",
                "--set",
                "config.actuators.kuberay.enabled=true",
            ),
            None,
            None,
            id="not-without-kueues-actuator",
        ),
    ],
)
def test_kueues_configuration_is_read_only_by_name_in_kueues_namespace(
    args: tuple[str, ...], namespace: str | None, name: str | None
) -> None:
    """A Role there, list and watch of that one ConfigMap; nothing cluster-wide."""
    manifests = render(*args)
    roles = [r for r in find(manifests, "Role") if r["metadata"]["name"].endswith("-configuration")]
    config_rules = [
        (role["metadata"]["namespace"], rule.get("resourceNames"), rule["verbs"])
        for role in roles
        for rule in role["rules"]
    ]
    expected = [] if namespace is None else [(namespace, [name], ["list", "watch"])]
    assert config_rules == expected
    cluster_wide = granted(find(manifests, "ClusterRole"))
    assert not {call for call in cluster_wide if call[1] == "configmaps"}
