from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.api.rig import ApiRig


@pytest.fixture
def rig() -> Iterator[ApiRig]:
    with ApiRig() as running:
        yield running
    assert running.kube.errors == []


@pytest.fixture(scope="module")
def shared() -> Iterator[ApiRig]:
    """One rig per test module, for tests that only read it or undo what they change: alice's
    RayCluster in team-a, after one cycle."""
    with ApiRig() as rig:
        rig.add_raycluster("team-a", "alice-rc")
        rig.cycle()
        yield rig
    assert rig.kube.errors == []
