"""The service the client's error tests talk to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.api.rig import ApiRig


@pytest.fixture(scope="module")
def service() -> Iterator[ApiRig]:
    """The REST API with alice's RayCluster in team-a, after one cycle."""
    with ApiRig() as rig:
        rig.add_raycluster("team-a", "alice-rc")
        rig.cycle()
        yield rig
