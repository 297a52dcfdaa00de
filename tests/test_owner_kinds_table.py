"""The owner kinds table (`domain/policy/owners.py`) is the one place a kind is added: the
settings' defaults, the Kueue adapter's resources and the calls the client may make all come
from its rows."""

from __future__ import annotations

import pytest

from autoscaler.adapters.kubernetes.resources import ALLOWED_CALLS
from autoscaler.adapters.kueue.resources import OWNER_RESOURCES, owner_resource
from autoscaler.domain.models import OwnerRef
from autoscaler.domain.policy.owners import (
    INTERMEDIATES,
    KNOWN_OWNERS,
    OWNER_KINDS,
    OwnerKind,
    PodsFound,
    known_owner,
)
from autoscaler.settings.tree import ClusterSettings

ROWS = [pytest.param(row, id=row.kind) for row in OWNER_KINDS]


@pytest.mark.parametrize("row", ROWS)
def test_every_row_says_where_the_kind_lives_how_its_pods_are_found_and_what_a_stop_means(
    row: OwnerKind,
) -> None:
    assert row.plural == row.plural.lower() and row.versions
    assert row.group or row.kind == "Pod"  # the core group's only row
    # a selector names the owner; every other way needs none
    assert ("{name}" in row.pod_selector) == (row.pods_found is PodsFound.SELECTOR)
    assert row.stop_means and row.bring_back
    assert row.source.startswith(("kubernetes-sigs/kueue pkg/controller/jobs/",))
    assert all(kind in INTERMEDIATES for kind in row.through)
    assert row.api_version == "/".join(filter(None, (row.group, row.versions[0])))


def test_each_kind_has_one_row() -> None:
    assert len(KNOWN_OWNERS) == len(OWNER_KINDS)


@pytest.mark.parametrize("row", ROWS)
def test_the_settings_default_to_each_row(row: OwnerKind) -> None:
    configured = ClusterSettings().owner_kinds[row.kind]
    assert (configured.enabled, configured.pod_selector) == (row.enabled, row.pod_selector or None)


def test_the_settings_default_to_the_table_and_nothing_else() -> None:
    assert set(ClusterSettings().owner_kinds) == set(KNOWN_OWNERS)


@pytest.mark.parametrize("row", ROWS)
def test_the_adapter_reads_and_writes_each_kind_where_its_row_says(row: OwnerKind) -> None:
    owner = OwnerRef(row.api_version, row.kind, "name", "uid")
    resource = owner_resource(owner)
    assert resource is OWNER_RESOURCES[row.kind]
    assert (resource.group, resource.version, resource.plural) == (
        row.group,
        row.versions[0],
        row.plural,
    )
    verbs = {
        verb for group, plural, verb in ALLOWED_CALLS if (group, plural) == (row.group, row.plural)
    }
    assert {"get", "list", "watch"} <= verbs
    # annotated only where the row says: never a pod
    assert ("patch" in verbs) == row.annotated


@pytest.mark.parametrize("row", ROWS)
def test_a_namesake_kind_of_another_group_is_not_ours(row: OwnerKind) -> None:
    namesake = OwnerRef(f"example.com/{row.versions[0]}", row.kind, "name", "uid")
    assert known_owner(namesake) is None
    assert owner_resource(namesake) is None
