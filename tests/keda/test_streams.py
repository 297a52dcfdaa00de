"""StreamIsActive (trigger type external-push): pushes within one publish, and scales to many."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta

import grpc
import pytest

from autoscaler.domain.models import Pauses, Snapshot
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


def test_stopping_the_server_ends_open_streams_promptly() -> None:
    with running_scaler() as scaler:
        scaler.publish(a_snapshot(rc().build(), usage_of=busy()))
        with stub_for(scaler.target) as stub:
            call = stub.StreamIsActive(RC, timeout=DEADLINE)
            assert next(answers(call)) is True
            started = time.monotonic()
            scaler.server.stop(grace=5.0)
            assert time.monotonic() - started < 1.0
            assert list(answers(call)) == []


def test_with_200_streams_open_is_active_answers_promptly_and_every_stream_gets_the_flip(
    scaler: Scaler,
) -> None:
    scaler.publish(a_snapshot(rc().build(), usage_of=idle()))
    with stub_for(scaler.target) as stub:
        calls = [stub.StreamIsActive(RC, timeout=30) for _ in range(200)]
        streams = [answers(call) for call in calls]
        assert all(next(stream) is False for stream in streams)

        started = time.monotonic()
        scaler.publish(a_snapshot(rc().exempt().build(), usage_of=idle(), cycle=2))
        publish_took = time.monotonic() - started
        started = time.monotonic()
        assert stub.IsActive(RC, timeout=DEADLINE).result is True
        answer_took = time.monotonic() - started

        assert all(next(stream) is True for stream in streams)
        for call in calls:
            call.cancel()
    assert publish_took < 0.05, "a publish must only schedule wake-ups"
    assert answer_took < 0.5, "IsActive must not queue behind open streams"
