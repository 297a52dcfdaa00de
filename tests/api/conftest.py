from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.api.rig import ApiRig


@pytest.fixture
def rig() -> Iterator[ApiRig]:
    with ApiRig() as running:
        yield running
    assert running.kube.errors == []
