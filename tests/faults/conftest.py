"""The fault suite shares the session's Prometheus (behind one auth proxy of its own, reset
for every test) and test API server; every test seeds its own namespaces."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LiveMetrics, PrometheusSession
from tests.faults.rig import CAST, FaultRig, Role, fault_settings
from tests.support.kube_server import KubeServer
from tests.support.prom import AuthProxy, make_tls_files

TOKEN = "faults-token-1"


@pytest.fixture(scope="session")
def session_proxy(
    prometheus_session: PrometheusSession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AuthProxy]:
    tls = make_tls_files(tmp_path_factory.mktemp("faults-proxy") / "tls")
    with AuthProxy(upstream=prometheus_session.server.url, tls=tls, token=TOKEN) as proxy:
        yield proxy


@pytest.fixture
def proxy(session_proxy: AuthProxy) -> Iterator[AuthProxy]:
    """The proxy as every test finds it: up, no faults, the first token, nobody denied."""
    session_proxy.reset()
    session_proxy.token = TOKEN
    session_proxy.denied.clear()
    if not session_proxy.running:
        session_proxy.start()
    yield session_proxy
    session_proxy.reset()
    if not session_proxy.running:
        session_proxy.start()


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n", encoding="utf-8")
    return path


@pytest.fixture
def namespace() -> str:
    return f"faults-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def prometheus_config(proxy: AuthProxy, token_file: Path) -> dict[str, Any]:
    """The `prometheus:` section: through the proxy, its CA, the token file."""
    return {"url": proxy.url, "caFile": str(proxy.ca_bundle), "bearerTokenFile": str(token_file)}


@pytest.fixture
def make_rig(
    kube_server: KubeServer,
    live_metrics: LiveMetrics,
    prometheus_session: PrometheusSession,
    prometheus_config: dict[str, Any],
    namespace: str,
) -> Iterator[Callable[..., FaultRig]]:
    """Builds the test's rig (a cast, settings sections to override); closes it after."""
    with ExitStack() as stack:

        def build(*, cast: dict[str, Role] = CAST, **sections: Any) -> FaultRig:
            settings = fault_settings(namespace, prometheus=prometheus_config, **sections)
            return stack.enter_context(
                FaultRig.build(
                    kube_server,
                    live_metrics.exporter,
                    settings=settings,
                    namespace=namespace,
                    prometheus_url=prometheus_session.server.url,
                    cast=cast,
                )
            )

        yield build


@pytest.fixture
def rig(make_rig: Callable[..., FaultRig]) -> FaultRig:
    return make_rig()
