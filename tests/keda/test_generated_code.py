"""The committed gRPC modules are exactly what the pinned grpcio-tools makes of our .proto,
and the .proto says what KEDA's does on the wire (package, methods, field numbers and types)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf.descriptor import FieldDescriptor

from autoscaler.keda import externalscaler_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
PROTO = "autoscaler/keda/externalscaler.proto"
GENERATED = ("externalscaler_pb2.py", "externalscaler_pb2_grpc.py", "externalscaler_pb2.pyi")


def grpc_tools_or_skip() -> None:
    try:
        import grpc_tools  # noqa: F401
    except ImportError:
        if os.environ.get("REQUIRE_REAL") == "1":
            pytest.fail("grpcio-tools is required (REQUIRE_REAL=1)")
        pytest.skip("grpcio-tools is not installed (pip install -e '.[test]')")


def test_the_committed_modules_match_a_fresh_generation(tmp_path: Path) -> None:
    grpc_tools_or_skip()
    command = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        "-I",
        ".",
        f"--python_out={tmp_path}",
        f"--grpc_python_out={tmp_path}",
        f"--pyi_out={tmp_path}",
        PROTO,
    ]
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True, timeout=60)
    for name in GENERATED:
        fresh = (tmp_path / "autoscaler" / "keda" / name).read_text(encoding="utf-8")
        committed = (ROOT / "autoscaler" / "keda" / name).read_text(encoding="utf-8")
        assert committed == fresh, f"{name} is stale: regenerate it (see docs/KEDA.md)"


def test_the_service_has_kedas_name_and_methods() -> None:
    service = pb.DESCRIPTOR.services_by_name["ExternalScaler"]
    assert service.full_name == "externalscaler.ExternalScaler"
    methods = {
        m.name: (m.input_type.name, m.output_type.name, m.server_streaming) for m in service.methods
    }
    assert methods == {
        "IsActive": ("ScaledObjectRef", "IsActiveResponse", False),
        "StreamIsActive": ("ScaledObjectRef", "IsActiveResponse", True),
        "GetMetricSpec": ("ScaledObjectRef", "GetMetricSpecResponse", False),
        "GetMetrics": ("GetMetricsRequest", "GetMetricsResponse", False),
    }


KEDA_FIELDS = {
    "ScaledObjectRef": {
        "name": (1, "string"),
        "namespace": (2, "string"),
        "scalerMetadata": (3, "map"),
    },
    "IsActiveResponse": {"result": (1, "bool")},
    "GetMetricSpecResponse": {"metricSpecs": (1, "MetricSpec")},
    "MetricSpec": {
        "metricName": (1, "string"),
        "targetSize": (2, "int64"),
        "targetSizeFloat": (3, "double"),
    },
    "GetMetricsRequest": {"scaledObjectRef": (1, "ScaledObjectRef"), "metricName": (2, "string")},
    "GetMetricsResponse": {"metricValues": (1, "MetricValue")},
    "MetricValue": {
        "metricName": (1, "string"),
        "metricValue": (2, "int64"),
        "metricValueFloat": (3, "double"),
    },
}
_SCALARS = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_DOUBLE: "double",
}


def kind(field: FieldDescriptor) -> str:
    if field.message_type is not None:
        options = field.message_type.GetOptions()
        return "map" if options.map_entry else field.message_type.name
    return _SCALARS[field.type]


@pytest.mark.parametrize("message", sorted(KEDA_FIELDS))
def test_messages_have_kedas_field_names_numbers_and_types(message: str) -> None:
    fields = pb.DESCRIPTOR.message_types_by_name[message].fields
    assert {f.name: (f.number, kind(f)) for f in fields} == KEDA_FIELDS[message]
    assert pb.DESCRIPTOR.package == "externalscaler"
