"""StreamIsActive (trigger type external-push): pushes within one publish, and scales to many."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import grpc
import pytest

from autoscaler.domain.models import Pauses, Snapshot
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.keda import externalscaler_pb2 as pb
from tests.keda.rig import DEADLINE, Scaler, keda_ref, running_scaler, stub_for
from tests.keda.snapshots import a_snapshot
from tests.support.domain_builders import NOW, UsageBuilder, WorkloadBuilder, a_workload, usage

RC = keda_ref({"workload": "rc"}, keda_keys={"enableTLS": "false"})


def rc() -> WorkloadBuilder:
    return a_workload("ml", "rc").gpu_pod("rc-0")


def idle() -> UsageBuilder:
    return usage().gpu("ml", "rc-0", peak=0.01)


def busy() -> UsageBuilder:
    return usage().gpu("ml", "rc-0", peak=0.7, last_busy=NOW)


def answers(call: Iterator[pb.IsActiveResponse]) -> Iterator[bool]:
    return (response.result for response in call)


@pytest.mark.parametrize(
    ("before", "after", "first", "then"),
    [
        pytest.param(
            a_snapshot(rc().build(), usage_of=idle()),
            a_snapshot(rc().exempt().build(), usage_of=idle(), cycle=2),
            False,
            True,
            id="exempting-an-idle-running-target-pushes-true",
        ),
        pytest.param(
            a_snapshot(rc().build(), usage_of=idle()),
            a_snapshot(rc().build(), usage_of=busy(), cycle=2),
            False,
            True,
            id="activity-coming-back-pushes-true",
        ),
        pytest.param(
            a_snapshot(rc().build(), usage_of=busy()),
            a_snapshot(rc().build(), usage_of=idle(), cycle=2),
            True,
            False,
            id="going-idle-pushes-false",
        ),
        pytest.param(
            a_snapshot(rc().build(), usage_of=idle()),
            a_snapshot(rc().build(), usage_of=idle(), pauses=Pauses(everything=True), cycle=2),
            False,
            True,
            id="a-pause-of-a-running-target-pushes-true",
        ),
    ],
)
def test_a_stream_pushes_the_flip_within_one_publish(
    scaler: Scaler, before: Snapshot, after: Snapshot, first: bool, then: bool
) -> None:
    scaler.publish(before)
    with stub_for(scaler.target) as stub:
        call = stub.StreamIsActive(RC, timeout=DEADLINE)
        results = answers(call)
        assert next(results) is first
        scaler.publish(after)
        assert next(results) is then
        call.cancel()


def test_unknown_answers_are_never_pushed(scaler: Scaler) -> None:
    scaler.publish(a_snapshot(rc().build(), usage_of=idle()))
    with stub_for(scaler.target) as stub:
        call = stub.StreamIsActive(RC, timeout=DEADLINE)
        results = answers(call)
        assert next(results) is False
        scaler.publish(a_snapshot(rc().build(), usage_of=usage().failing("down"), cycle=2))
        scaler.publish(a_snapshot(rc().build(), usage_of=busy(), cycle=3))
        assert next(results) is True  # nothing came for the unknown cycle in between
        call.cancel()


def test_an_unchanged_answer_is_repeated_each_heartbeat() -> None:
    with running_scaler(heartbeat=timedelta(seconds=0.2)) as scaler:
        scaler.publish(a_snapshot(rc().build(), usage_of=busy()))
        with stub_for(scaler.target) as stub:
            call = stub.StreamIsActive(RC, timeout=DEADLINE)
            results = answers(call)
            started = time.monotonic()
            assert [next(results), next(results), next(results)] == [True, True, True]
            assert time.monotonic() - started >= 0.35
            call.cancel()


def test_a_stream_with_bad_metadata_ends_with_invalid_argument(scaler: Scaler) -> None:
    with stub_for(scaler.target) as stub:
        call = stub.StreamIsActive(keda_ref({"workload": "rc", "bogus": "1"}), timeout=DEADLINE)
        with pytest.raises(grpc.RpcError) as caught:
            next(iter(call))
        assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT


def test_stopping_the_server_ends_open_streams_at_once_not_at_the_grace() -> None:
    """The server ends every stream itself as it stops (KEDA reconnects to another replica):
    the stream ends cleanly, with OK. Left open, gRPC would cancel it once the grace ran out,
    a minute here, and the client would see CANCELLED."""
    with running_scaler() as scaler:
        scaler.publish(a_snapshot(rc().build(), usage_of=busy()))
        with stub_for(scaler.target) as stub:
            call = stub.StreamIsActive(RC, timeout=120)
            assert next(answers(call)) is True
            scaler.server.stop(grace=60.0)
            assert list(answers(call)) == []
            assert call.code() is grpc.StatusCode.OK


HOLD_LIMIT_S = 30.0  # a held read gives up by then, so a broken server fails, never hangs


class HeldReads(SnapshotStore):
    """A store whose next read of the latest snapshot can be held by the test: once `hold()`
    is called, the first reader (a stream judging after a publish, on the server's one event
    loop, so every stream with it) waits until `release()`."""

    def __init__(self) -> None:
        super().__init__()
        self._holding = False
        self.reader_held = threading.Event()
        self._released = threading.Event()
        self.gave_up = False  # the hold ran out: nobody released it in time

    def hold(self) -> None:
        self._holding = True

    def release(self) -> None:
        self._released.set()

    def latest(self) -> Snapshot | None:
        if self._holding:
            self._holding = False
            self.reader_held.set()
            self.gave_up = not self._released.wait(HOLD_LIMIT_S)
        return super().latest()


def test_a_publish_never_waits_on_a_stream_and_is_active_answers_with_200_streams_open() -> None:
    """What KEDA's many ScaledObjects rely on; the latency is benchmarks/README.md's ("KEDA
    scaler latency", streams open): the loop's publish only schedules wake-ups, so it returns
    while a stream it woke is held mid-answer; and a stream waiting for a change holds
    nothing an IsActive call needs, so 200 of them open do not queue it."""
    store = HeldReads()
    with running_scaler(store=store) as scaler, stub_for(scaler.target) as stub:
        scaler.publish(a_snapshot(rc().build(), usage_of=idle()))
        calls = [stub.StreamIsActive(RC, timeout=120) for _ in range(200)]
        streams = [answers(call) for call in calls]
        assert all(next(stream) is False for stream in streams)

        store.hold()
        scaler.publish(a_snapshot(rc().exempt().build(), usage_of=idle(), cycle=2))
        # Returned; had it waited for the streams it woke, it would have waited out the hold.
        assert store.reader_held.wait(HOLD_LIMIT_S), "no stream woke to judge the publish"
        assert not store.gave_up, "the publish waited for a stream"
        store.release()

        # Every stream still open, none of them read since the flip: the IsActive call is
        # answered beside them. The deadline is a failure bound, not a target.
        assert not any(call.done() for call in calls)
        assert stub.IsActive(RC, timeout=30).result is True
        assert all(next(stream) is True for stream in streams)
        for call in calls:
            call.cancel()
