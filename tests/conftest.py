"""Session-wide rigs: one test Kubernetes API server and one real Prometheus scraping a live
fake dcgm-exporter every second. Tests keep to their own namespaces so they can share them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.support.kube_server import KubeServer
from tests.support.prom import FakeDcgmExporter, PrometheusServer, require_binaries


@pytest.fixture(scope="session")
def kube_server() -> Iterator[KubeServer]:
    with KubeServer() as server:
        yield server
        assert server.errors == [], f"the test API server answered 500s: {server.errors}"


@dataclass(frozen=True)
class LiveMetrics:
    """A fake dcgm-exporter whose values a test sets, scraped every second by Prometheus."""

    exporter: FakeDcgmExporter
    prometheus: PrometheusServer


@pytest.fixture(scope="session")
def live_metrics(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveMetrics]:
    binaries = require_binaries()
    with FakeDcgmExporter() as exporter:
        prometheus = PrometheusServer(
            tmp_path_factory.mktemp("live-prometheus"), binaries=binaries, exporters=[exporter]
        )
        with prometheus:
            yield LiveMetrics(exporter=exporter, prometheus=prometheus)
