"""A request whose bytes are not the method's protobuf message, sent raw over a real channel,
is answered INVALID_ARGUMENT in words, never UNKNOWN naming the decoder's exception."""

from __future__ import annotations

import grpc
import pytest

from autoscaler.keda import externalscaler_pb2 as pb
from tests.keda.rig import DEADLINE, Scaler

SERVICE = "/externalscaler.ExternalScaler/"
UNARY = ("IsActive", "GetMetricSpec", "GetMetrics")
MALFORMED = {
    "not-protobuf": b"\xff\xff\xff",
    "field-longer-than-the-message": b"\x0a\x05ab",
    "string-not-utf-8": b"\x0a\x02\xff\xfe",
    "truncated-varint": b"\x08\x80",
}


def call_raw(scaler: Scaler, method: str, raw: bytes) -> grpc.RpcError:
    """The error `method` answers `raw` bytes with; the stream's first answer for streams."""
    with grpc.insecure_channel(scaler.target) as channel:
        path = SERVICE + method
        with pytest.raises(grpc.RpcError) as caught:
            if method in UNARY:
                channel.unary_unary(path)(raw, timeout=DEADLINE)
            else:
                next(iter(channel.unary_stream(path)(raw, timeout=DEADLINE)))
    return caught.value


@pytest.mark.parametrize("raw", MALFORMED.values(), ids=MALFORMED.keys())
@pytest.mark.parametrize("method", [*UNARY, "StreamIsActive"])
def test_bytes_that_are_not_the_message_are_an_invalid_argument_in_words(
    scaler: Scaler, method: str, raw: bytes
) -> None:
    error = call_raw(scaler, method, raw)
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert error.details() == f"malformed request: not a valid protobuf message for {method}"  # type: ignore[attr-defined]


def test_a_message_that_decodes_still_reaches_the_scaler(scaler: Scaler) -> None:
    """The decoder is only made tolerant: a well-formed reference with bad metadata is
    judged by the scaler, which names the bad key."""
    raw = pb.ScaledObjectRef(name="so", namespace="ml", scalerMetadata={"nope": "1"})
    error = call_raw(scaler, "IsActive", raw.SerializeToString())
    assert error.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert "unknown scalerMetadata keys: nope" in error.details()  # type: ignore[attr-defined]
