from __future__ import annotations

from collections.abc import Iterator

import pytest

from autoscaler.keda import externalscaler_pb2_grpc as pb_grpc
from tests.keda.rig import Scaler, running_scaler, stub_for


@pytest.fixture
def scaler() -> Iterator[Scaler]:
    with running_scaler(profiles=("fast",)) as running:
        yield running


@pytest.fixture
def stub(scaler: Scaler) -> Iterator[pb_grpc.ExternalScalerStub]:
    with stub_for(scaler.target) as client:
        yield client
