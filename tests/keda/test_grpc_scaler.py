"""Every RPC over a real loopback grpc.aio server, with metadata exactly as KEDA sends it."""

from __future__ import annotations

import logging
from datetime import timedelta

import grpc
import pytest

from autoscaler.keda import externalscaler_pb2 as pb
from autoscaler.keda import externalscaler_pb2_grpc as pb_grpc
from autoscaler.keda.server import MAX_MESSAGE_BYTES
from tests.keda.rig import DEADLINE, Scaler, keda_ref
from tests.keda.snapshots import a_snapshot, gpu_pod
from tests.support.domain_builders import NOW, THRESHOLD, a_workload, minutes_ago, usage

KEDA_KEYS = {"enableTLS": "false", "unsafeSsl": "false"}
Stub = pb_grpc.ExternalScalerStub


def publish_rc(scaler: Scaler, *, peak: float | None, phase: str = "Running") -> None:
    workload = a_workload("ml", "rc").gpu_pod("rc-0", phase=phase).build()
    fleet = (
        usage()
        if peak is None
        else usage().gpu("ml", "rc-0", peak=peak, last_busy=NOW if peak > THRESHOLD else None)
    )
    scaler.publish(a_snapshot(workload, usage_of=fleet))


def rc_ref(**extra: str) -> pb.ScaledObjectRef:
    return keda_ref({"workload": "rc", **extra}, scaled_object="rc-scaler", keda_keys=KEDA_KEYS)


def code_of(call: object) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as caught:
        call()  # type: ignore[operator]
    return caught.value.code()  # type: ignore[no-any-return]


def test_a_busy_workload_is_active(scaler: Scaler, stub: Stub) -> None:
    publish_rc(scaler, peak=0.8)
    assert stub.IsActive(rc_ref(), timeout=DEADLINE).result is True


def test_a_workload_idle_for_the_whole_window_is_inactive(scaler: Scaler, stub: Stub) -> None:
    publish_rc(scaler, peak=0.01)
    assert stub.IsActive(rc_ref(), timeout=DEADLINE).result is False


def test_a_target_without_running_pods_is_inactive_and_measures_zero(
    scaler: Scaler, stub: Stub
) -> None:
    publish_rc(scaler, peak=None, phase="Pending")
    assert stub.IsActive(rc_ref(), timeout=DEADLINE).result is False
    [value] = stub.GetMetrics(
        pb.GetMetricsRequest(scaledObjectRef=rc_ref()), timeout=DEADLINE
    ).metricValues
    assert (value.metricValue, value.metricValueFloat) == (0, 0.0)


def test_the_metric_spec_is_one_peak_utilization_metric_with_target_100_in_both_fields(
    stub: Stub,
) -> None:
    # No snapshot published: the spec depends on the metadata only.
    [spec] = stub.GetMetricSpec(rc_ref(), timeout=DEADLINE).metricSpecs
    assert spec.metricName == "gpu-peak-utilization-ml-rc"
    assert (spec.targetSize, spec.targetSizeFloat) == (100, 100.0)


def test_metrics_carry_the_peak_in_percent_in_the_float_and_the_deprecated_integer(
    scaler: Scaler, stub: Stub
) -> None:
    publish_rc(scaler, peak=0.376)
    request = pb.GetMetricsRequest(
        scaledObjectRef=rc_ref(), metricName="gpu-peak-utilization-ml-rc"
    )
    [value] = stub.GetMetrics(request, timeout=DEADLINE).metricValues
    assert value.metricName == "gpu-peak-utilization-ml-rc"
    assert value.metricValueFloat == pytest.approx(37.6)
    assert value.metricValue == 38


def test_a_pod_selector_judges_a_deployments_gpu_pods(scaler: Scaler, stub: Stub) -> None:
    pods = (gpu_pod("ml", "llm-7f-x", labels={"app": "llm"}),)
    scaler.publish(
        a_snapshot(usage_of=usage().gpu("ml", "llm-7f-x", peak=0.9, last_busy=NOW), pods=pods)
    )
    ref = keda_ref({"podSelector": "app=llm"}, keda_keys=KEDA_KEYS)
    assert stub.IsActive(ref, timeout=DEADLINE).result is True
    [spec] = stub.GetMetricSpec(ref, timeout=DEADLINE).metricSpecs
    assert spec.metricName.startswith("gpu-peak-utilization-ml-sel-")


def test_a_trigger_can_pick_a_configured_profile(scaler: Scaler, stub: Stub) -> None:
    workload = a_workload("ml", "rc").gpu_pod("rc-0").build()
    fleet = usage().gpu("ml", "rc-0", peak=0.01, last_busy=minutes_ago(20))
    fast = {"fast": (timedelta(minutes=10), THRESHOLD)}
    scaler.publish(a_snapshot(workload, usage_of=fleet, profiles=fast))
    assert stub.IsActive(rc_ref(profile="fast"), timeout=DEADLINE).result is False
    assert stub.IsActive(rc_ref(), timeout=DEADLINE).result is True


def test_the_service_answers_at_kedas_method_paths(scaler: Scaler) -> None:
    publish_rc(scaler, peak=0.8)
    with grpc.insecure_channel(scaler.target) as channel:
        call = channel.unary_unary(
            "/externalscaler.ExternalScaler/IsActive",
            request_serializer=pb.ScaledObjectRef.SerializeToString,
            response_deserializer=pb.IsActiveResponse.FromString,
        )
        assert call(rc_ref(), timeout=DEADLINE).result is True


@pytest.mark.parametrize(
    "rpc",
    [
        pytest.param(lambda s, r: s.IsActive(r, timeout=DEADLINE), id="IsActive"),
        pytest.param(lambda s, r: s.GetMetricSpec(r, timeout=DEADLINE), id="GetMetricSpec"),
        pytest.param(
            lambda s, r: s.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=r), timeout=DEADLINE),
            id="GetMetrics",
        ),
        pytest.param(lambda s, r: next(s.StreamIsActive(r, timeout=DEADLINE)), id="StreamIsActive"),
    ],
)
def test_unknown_metadata_keys_are_invalid_arguments_naming_them(
    scaler: Scaler, stub: Stub, rpc: object
) -> None:
    publish_rc(scaler, peak=0.8)
    ref = keda_ref({"workload": "rc", "threshold": "5", "windoww": "1h"})
    with pytest.raises(grpc.RpcError) as caught:
        rpc(stub, ref)  # type: ignore[operator]
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "threshold, windoww" in caught.value.details()


@pytest.mark.parametrize(
    ("metadata", "code", "says"),
    [
        pytest.param(
            {"workload": "rc", "podSelector": "a=b"},
            grpc.StatusCode.INVALID_ARGUMENT,
            "exactly one",
            id="bad-metadata",
        ),
        pytest.param(
            {"workload": "rc", "profile": "nope"},
            grpc.StatusCode.INVALID_ARGUMENT,
            "unknown profile",
            id="unknown-profile",
        ),
        pytest.param(
            {"workload": "ghost"}, grpc.StatusCode.NOT_FOUND, "ml/ghost", id="unknown-target"
        ),
        pytest.param(
            {"workload": "rc", "namespace": "other"},
            grpc.StatusCode.NOT_FOUND,
            "other/rc",
            id="other-namespace",
        ),
    ],
)
def test_errors_carry_a_status_that_holds_replicas_and_says_why(
    scaler: Scaler, stub: Stub, metadata: dict[str, str], code: grpc.StatusCode, says: str
) -> None:
    publish_rc(scaler, peak=0.01)
    ref = keda_ref(metadata, keda_keys=KEDA_KEYS)
    for call in (
        lambda: stub.IsActive(ref, timeout=DEADLINE),
        lambda: stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref), timeout=DEADLINE),
    ):
        with pytest.raises(grpc.RpcError) as caught:
            call()
        assert caught.value.code() is code
        assert says in caught.value.details()


@pytest.mark.parametrize(
    "publish",
    [
        pytest.param(lambda s: None, id="no-cycle-yet"),
        pytest.param(lambda s: publish_rc(s, peak=None), id="missing-series"),
        pytest.param(
            lambda s: s.publish(
                a_snapshot(
                    a_workload("ml", "rc").gpu_pod("rc-0").build(),
                    usage_of=usage().failing("timeout"),
                )
            ),
            id="prometheus-down",
        ),
    ],
)
def test_unknown_data_is_unavailable_never_false(
    scaler: Scaler, stub: Stub, publish: object
) -> None:
    publish(scaler)  # type: ignore[operator]
    assert code_of(lambda: stub.IsActive(rc_ref(), timeout=DEADLINE)) is grpc.StatusCode.UNAVAILABLE
    request = pb.GetMetricsRequest(scaledObjectRef=rc_ref())
    assert (
        code_of(lambda: stub.GetMetrics(request, timeout=DEADLINE)) is grpc.StatusCode.UNAVAILABLE
    )


def test_tls_keys_in_metadata_are_accepted_and_warned_about_once(
    scaler: Scaler, stub: Stub, caplog: pytest.LogCaptureFixture
) -> None:
    publish_rc(scaler, peak=0.8)
    ref = keda_ref({"workload": "rc"}, keda_keys={"caCert": "/tls/ca.pem", **KEDA_KEYS})
    with caplog.at_level(logging.WARNING, logger="test.keda"):
        for _ in range(3):
            assert stub.IsActive(ref, timeout=DEADLINE).result is True
    warnings = [r for r in caplog.records if "caCert" in r.getMessage()]
    assert len(warnings) == 1
    assert "TriggerAuthentication" in warnings[0].getMessage()


def test_a_message_over_the_receive_limit_is_refused_unread(scaler: Scaler, stub: Stub) -> None:
    publish_rc(scaler, peak=0.8)
    ref = keda_ref({"workload": "rc", "padding": "x" * (MAX_MESSAGE_BYTES + 1)})
    with pytest.raises(grpc.RpcError) as caught:
        stub.IsActive(ref, timeout=DEADLINE)
    assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
