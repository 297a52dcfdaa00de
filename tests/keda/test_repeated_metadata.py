"""The same trigger metadata, sent again and again as KEDA polls, is read once and answered
the same way every time: remembering it never changes whose target it selects, who is
warned, or what is refused (issue 18: reading metadata was most of our own time per call)."""

from __future__ import annotations

import logging

import grpc
import pytest

from autoscaler.keda import externalscaler_pb2_grpc as pb_grpc
from tests.keda.rig import DEADLINE, Scaler, keda_ref
from tests.keda.snapshots import a_snapshot
from tests.support.domain_builders import NOW, THRESHOLD, a_workload, usage

Stub = pb_grpc.ExternalScalerStub
POLLS = 3


def publish_busy_ml_idle_other(scaler: Scaler) -> None:
    """Workload `rc` in two namespaces: busy in `ml`, idle for the whole window in `other`."""
    busy = a_workload("ml", "rc").gpu_pod("rc-ml-0").build()
    idle = a_workload("other", "rc").gpu_pod("rc-other-0").build()
    fleet = usage().gpu("ml", "rc-ml-0", peak=0.8, last_busy=NOW)
    fleet.gpu("other", "rc-other-0", peak=0.01)
    scaler.publish(a_snapshot(busy, idle, usage_of=fleet))


def test_the_same_metadata_from_two_namespaces_selects_each_namespaces_workload(
    scaler: Scaler, stub: Stub
) -> None:
    publish_busy_ml_idle_other(scaler)
    in_ml, in_other = (keda_ref({"workload": "rc"}, namespace=ns) for ns in ("ml", "other"))
    for _ in range(POLLS):
        assert stub.IsActive(in_ml, timeout=DEADLINE).result is True
        assert stub.IsActive(in_other, timeout=DEADLINE).result is False


def test_tls_keys_are_warned_about_once_for_each_scaled_object_sending_them(
    scaler: Scaler, stub: Stub, caplog: pytest.LogCaptureFixture
) -> None:
    publish_busy_ml_idle_other(scaler)
    tls = {"caCert": "/tls/ca.pem"}
    refs = [keda_ref({"workload": "rc"}, scaled_object=so, keda_keys=tls) for so in ("a", "b")]
    with caplog.at_level(logging.WARNING, logger="test.keda"):
        for _ in range(POLLS):
            for ref in refs:
                assert stub.IsActive(ref, timeout=DEADLINE).result is True
    warned = [r.getMessage() for r in caplog.records if "caCert" in r.getMessage()]
    assert [message.split(" sets ")[0] for message in warned] == [
        "trigger metadata of ml/a",
        "trigger metadata of ml/b",
    ]


def test_refused_metadata_is_refused_on_every_call(scaler: Scaler, stub: Stub) -> None:
    publish_busy_ml_idle_other(scaler)
    ref = keda_ref({"workload": "rc", "threshold": "5"})
    for _ in range(POLLS):
        with pytest.raises(grpc.RpcError) as caught:
            stub.IsActive(ref, timeout=DEADLINE)
        assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert "threshold" in str(caught.value.details())


def test_metadata_too_large_to_remember_is_still_answered_on_every_call(
    scaler: Scaler, stub: Stub
) -> None:
    publish_busy_ml_idle_other(scaler)
    long_address = "idle-gpu-autoscaler." + "x" * 4000 + ":9090"
    ref = keda_ref({"workload": "rc"}, namespace="other", keda_keys={"scalerAddress": long_address})
    for _ in range(POLLS):
        assert stub.IsActive(ref, timeout=DEADLINE).result is False


def test_a_new_snapshot_answers_anew_for_metadata_already_read(scaler: Scaler, stub: Stub) -> None:
    publish_busy_ml_idle_other(scaler)
    ref = keda_ref({"workload": "rc"}, namespace="other")
    assert stub.IsActive(ref, timeout=DEADLINE).result is False
    busy_now = a_workload("other", "rc").gpu_pod("rc-other-0").build()
    fleet = usage().gpu("other", "rc-other-0", peak=THRESHOLD + 0.5, last_busy=NOW)
    scaler.publish(a_snapshot(busy_now, usage_of=fleet, cycle=2))
    assert stub.IsActive(ref, timeout=DEADLINE).result is True
