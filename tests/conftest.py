"""Session-wide rigs: one test Kubernetes API server and one real Prometheus per pytest
session (each pytest-xdist worker is one). Tests keep to their own namespaces (and, for
backfilled history, their own hours) so they can share them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import pytest

from tests.support import ast_parse_guard
from tests.support.kube_server import KubeServer
from tests.support.prom import FakeDcgmExporter, LabelStyle, PrometheusServer, require_binaries
from tests.support.prom_histories import (
    RIG_POD_A,
    RIG_POD_B,
    RIG_POD_H,
    Area,
    anchor,
    backfill,
    session_backfills,
)
from tests.support.webhook_receiver import WEBHOOK_SECRET, WebhookReceiver

ast_parse_guard.install()  # before any test parses: see the module for the interpreter bug


@pytest.fixture(scope="session")
def kube_server() -> Iterator[KubeServer]:
    with KubeServer() as server:
        yield server
        assert server.errors == [], f"the test API server answered 500s: {server.errors}"


@dataclass(frozen=True)
class LiveExporters:
    """Every live exporter a test uses, all scraped from the start: telling a running
    Prometheus about a new one takes 5-10 s. A test that sets values clears them after."""

    e2e: FakeDcgmExporter
    rig: FakeDcgmExporter
    rig_replacement: FakeDcgmExporter
    rig_honoring: FakeDcgmExporter

    def all(self) -> tuple[FakeDcgmExporter, ...]:
        return (self.e2e, self.rig, self.rig_replacement, self.rig_honoring)


@dataclass(frozen=True)
class PrometheusSession:
    """The session's one Prometheus: every history of tests/support/prom_histories.py was
    backfilled before it started, and it scrapes every live exporter once a second."""

    server: PrometheusServer
    exporters: LiveExporters
    began: int  # unix seconds, a whole minute; each area's history ends 12 h apart before it

    def anchor(self, area: Area) -> int:
        return anchor(self.began, area)


@pytest.fixture(scope="session")
def prometheus_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrometheusSession]:
    binaries = require_binaries()
    workdir = tmp_path_factory.mktemp("prometheus")
    began = int(time.time()) // 60 * 60
    with ExitStack() as stack:
        exporters = LiveExporters(
            e2e=FakeDcgmExporter(),
            rig=FakeDcgmExporter(pod=RIG_POD_A),
            rig_replacement=FakeDcgmExporter(pod=RIG_POD_B),
            rig_honoring=FakeDcgmExporter(pod=RIG_POD_H, style=LabelStyle.HONOR_LABELS),
        )
        for exporter in exporters.all():
            stack.enter_context(exporter)
        server = PrometheusServer(workdir, binaries=binaries, exporters=exporters.all())
        backfill(session_backfills(began), server.data_dir, promtool=binaries.promtool)
        stack.callback(server.stop)
        server.start(wait_for_targets=False)  # the first scrape takes 5-10 s: wait only if needed
        yield PrometheusSession(server, exporters, began)


@dataclass(frozen=True)
class LiveMetrics:
    """A fake dcgm-exporter whose values a test sets, scraped every second by Prometheus."""

    exporter: FakeDcgmExporter
    prometheus: PrometheusServer


@pytest.fixture(scope="session")
def live_metrics(prometheus_session: PrometheusSession) -> LiveMetrics:
    prometheus_session.server.wait_for_targets()
    return LiveMetrics(
        exporter=prometheus_session.exporters.e2e, prometheus=prometheus_session.server
    )


@pytest.fixture
def webhook_receiver() -> Iterator[WebhookReceiver]:
    """A real HTTP receiver on 127.0.0.1 that verifies our HMAC header with WEBHOOK_SECRET."""
    with WebhookReceiver(secret=WEBHOOK_SECRET) as receiver:
        yield receiver
