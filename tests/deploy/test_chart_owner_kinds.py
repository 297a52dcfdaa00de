"""The chart's owner kinds come from the service's table (`files/owner-kinds.yaml`, generated
by `tests/deploy/owner_kinds_file.py`): a kind added there is granted and rendered with no
chart edit, and `config.cluster.ownerKinds` entries still win."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.domain.policy.owners import OWNER_KINDS
from tests.deploy.owner_kinds_file import OWNER_KINDS_FILE, owner_kinds_text
from tests.deploy.rbac_golden import golden, rbac_summary
from tests.deploy.test_rbac_matches_client import granted, own_roles
from tests.deploy.tooling import render, settings_from


def test_the_charts_owner_kinds_file_is_generated_from_the_table() -> None:
    assert OWNER_KINDS_FILE.read_text(encoding="utf-8") == owner_kinds_text(), (
        "regenerate: python -m tests.deploy.owner_kinds_file"
    )


@pytest.mark.real
def test_every_kind_of_the_table_may_be_read() -> None:
    reads = granted(own_roles(render()))
    for row in OWNER_KINDS:
        assert {(row.group, row.plural, verb) for verb in ("get", "list", "watch")} <= reads


@pytest.mark.real
def test_a_kind_the_values_leave_out_is_rendered_as_its_row(tmp_path: Path) -> None:
    manifests = render("--set", "config.cluster.ownerKinds.Job=null")
    (job,) = (row for row in OWNER_KINDS if row.kind == "Job")
    configured = settings_from(manifests, tmp_path).cluster.owner_kinds["Job"]
    assert (configured.enabled, configured.pod_selector) == (job.enabled, job.pod_selector)
    assert rbac_summary(manifests) == golden("rbac-defaults.yaml")


@pytest.mark.real
def test_an_entry_of_the_values_wins_over_its_row(tmp_path: Path) -> None:
    ray = "config.cluster.ownerKinds.RayCluster"
    manifests = render("--set", f"{ray}.enabled=false", "--set", f"{ray}.podSelector=app={{name}}")
    configured = settings_from(manifests, tmp_path).cluster.owner_kinds["RayCluster"]
    assert (configured.enabled, configured.pod_selector) == (False, "app={name}")
    assert ("ray.io", "rayclusters", "patch") not in granted(own_roles(manifests))
