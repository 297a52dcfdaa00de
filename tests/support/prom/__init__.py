"""Test rig around a real Prometheus: dcgm-exporter histories, backfill, live exporter, auth proxy.

The session fixture `prometheus_session` in tests/conftest.py builds one server for the whole run;
its parts, in short:

    binaries = require_binaries()                       # skip / fail(REQUIRE_REAL=1) if missing
    with FakeDcgmExporter() as exporter:
        prom = PrometheusServer(tmp / "prom", binaries=binaries, exporters=[exporter])
        prom.backfill(history, start=now - 3 * 3600, end=now - 60)   # before start: no restart
        tls = make_tls_files(tmp / "tls")
        with prom, AuthProxy(upstream=prom.url, tls=tls, token="t") as proxy:
            ...
"""

from .auth_proxy import AuthProxy, SeenRequest, ranges_in
from .backfill import BackfillStats, backfill_series, block_duration_for, create_blocks
from .dcgm import (
    ALL_METRICS,
    GPU_UTIL,
    GR_ENGINE_ACTIVE,
    ExporterPod,
    Gpu,
    GpuSeries,
    LabelStyle,
    Mig,
    Replacement,
    fleet,
    gpu_uuid,
)
from .device_fields import DeviceFields
from .exporter import FakeDcgmExporter
from .openmetrics import write_openmetrics
from .profiles import Burst, Profile
from .server import PrometheusServer, running_prometheus
from .tls import TlsFiles, make_tls_files
from .tools import PrometheusBinaries, free_port, require_binaries, wait_until

__all__ = [
    "ALL_METRICS",
    "GPU_UTIL",
    "GR_ENGINE_ACTIVE",
    "AuthProxy",
    "BackfillStats",
    "Burst",
    "DeviceFields",
    "ExporterPod",
    "FakeDcgmExporter",
    "Gpu",
    "GpuSeries",
    "LabelStyle",
    "Mig",
    "Profile",
    "PrometheusBinaries",
    "PrometheusServer",
    "Replacement",
    "SeenRequest",
    "TlsFiles",
    "backfill_series",
    "block_duration_for",
    "create_blocks",
    "fleet",
    "free_port",
    "gpu_uuid",
    "make_tls_files",
    "ranges_in",
    "require_binaries",
    "running_prometheus",
    "wait_until",
    "write_openmetrics",
]
