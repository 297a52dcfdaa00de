"""The chart grants exactly the Kubernetes calls the client module may make, and nothing more.

autoscaler/adapters/kubernetes/client.py refuses any call whose (group, resource, verb) is not in
ALLOWED_CALLS; the chart's Roles and ClusterRoles must grant that set exactly, so a new call
cannot ship without its RBAC, and no permission outlives the code that used it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.adapters.kubernetes.resources import ALLOWED_CALLS
from tests.deploy.tooling import CI_VALUES, NAMESPACE, RELEASE, Manifest, find, render, values_args

VALUE_SETS = [pytest.param(None, id="defaults")] + [
    pytest.param(path, id=path.stem) for path in CI_VALUES
]
# Namespaced on purpose: the runtime-state ConfigMap and the Lease live in the release namespace.
RELEASE_NAMESPACE_ONLY = {("", "configmaps"), ("coordination.k8s.io", "leases")}


def granted(roles: list[Manifest]) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for role in roles
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def own_roles(manifests: list[Manifest]) -> list[Manifest]:
    return find(manifests, "ClusterRole") + find(manifests, "Role")


@pytest.mark.real
@pytest.mark.parametrize("values_file", VALUE_SETS)
def test_rendered_roles_grant_exactly_the_calls_the_client_allows(
    values_file: Path | None,
) -> None:
    assert granted(own_roles(render(*values_args(values_file)))) == set(ALLOWED_CALLS)


@pytest.mark.real
def test_state_and_lease_permissions_stay_in_the_release_namespace() -> None:
    manifests = render()
    cluster_wide = {(g, r) for g, r, _ in granted(find(manifests, "ClusterRole"))}
    assert not cluster_wide & RELEASE_NAMESPACE_ONLY
    (role,) = find(manifests, "Role")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert {(g, r) for g, r, _ in granted([role])} == RELEASE_NAMESPACE_ONLY


@pytest.mark.real
def test_config_map_reads_and_writes_are_limited_to_the_state_config_map() -> None:
    (role,) = find(render(), "Role")
    for rule in role["rules"]:
        if rule["resources"] == ["configmaps"] and rule["verbs"] != ["create"]:
            assert rule["resourceNames"] == [f"{RELEASE}-state"]


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
