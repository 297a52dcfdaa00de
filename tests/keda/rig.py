"""A real loopback KEDA scaler (grpc.aio server on its own thread) and stubs from our proto."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import grpc

from autoscaler.domain.models import Snapshot
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.keda import externalscaler_pb2 as pb
from autoscaler.keda import externalscaler_pb2_grpc as pb_grpc
from autoscaler.keda.answers import KedaAnswers
from autoscaler.keda.server import KedaGrpcServer
from autoscaler.settings.keda import KedaTlsSettings
from tests.keda.snapshots import JUDGING
from tests.support.domain_builders import NOW

SCALER_ADDRESS = "idle-gpu-autoscaler.idle-gpu-autoscaler.svc.cluster.local:9090"
DEADLINE = 5.0  # seconds per call; KEDA's own is 3


@dataclass
class FakeClock:
    current: datetime = NOW

    def now(self) -> datetime:
        return self.current


@dataclass
class Scaler:
    store: SnapshotStore
    clock: FakeClock
    answers: KedaAnswers
    server: KedaGrpcServer
    target: str = field(init=False)

    def __post_init__(self) -> None:
        self.target = f"127.0.0.1:{self.server.port}"

    def publish(self, snapshot: Snapshot) -> None:
        self.store.publish(snapshot)


def make_answers(
    store: SnapshotStore,
    clock: FakeClock,
    *,
    profiles: tuple[str, ...] = (),
    logger: logging.Logger | None = None,
) -> KedaAnswers:
    return KedaAnswers(
        latest=store.latest,
        judging=JUDGING,
        profiles=profiles,
        clock=clock,
        max_snapshot_age=timedelta(minutes=3),
        logger=logger or logging.getLogger("test.keda"),
    )


@contextmanager
def running_scaler(
    *,
    tls: KedaTlsSettings | None = None,
    heartbeat: timedelta = timedelta(seconds=30),
    profiles: tuple[str, ...] = (),
    store: SnapshotStore | None = None,
) -> Iterator[Scaler]:
    """`store`: one of the test's own (e.g. one whose reads it can hold)."""
    store, clock = store or SnapshotStore(), FakeClock()
    answers = make_answers(store, clock, profiles=profiles)
    server = KedaGrpcServer(
        answers=answers,
        store=store,
        tls=tls or KedaTlsSettings(),
        heartbeat=heartbeat,
        address="127.0.0.1:0",
        logger=logging.getLogger("test.keda.server"),
    )
    server.start()
    try:
        yield Scaler(store, clock, answers, server)
    finally:
        server.stop(grace=0.5)


@contextmanager
def stub_for(
    target: str, credentials: grpc.ChannelCredentials | None = None
) -> Iterator[pb_grpc.ExternalScalerStub]:
    channel = (
        grpc.insecure_channel(target)
        if credentials is None
        else grpc.secure_channel(target, credentials)
    )
    with channel:
        yield pb_grpc.ExternalScalerStub(channel)


def keda_ref(
    ours: Mapping[str, str],
    *,
    namespace: str = "ml",
    scaled_object: str = "so",
    keda_keys: Mapping[str, str] | None = None,
) -> pb.ScaledObjectRef:
    """What KEDA sends: the ScaledObject's name and namespace, and the trigger's whole metadata."""
    metadata = {"scalerAddress": SCALER_ADDRESS, **(keda_keys or {}), **ours}
    return pb.ScaledObjectRef(name=scaled_object, namespace=namespace, scalerMetadata=metadata)
