"""The API as the composition root will run it: beside the loop, started and stopped with it."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
from fastapi import APIRouter, HTTPException
from kubernetes.client import ApiClient

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.compose.api import MetricsApiAccess, build_api, build_auth
from autoscaler.compose.serve import build_shared_state
from autoscaler.compose.service import build_service
from autoscaler.core.clock import SystemClock
from autoscaler.settings.api import ApiSettings
from autoscaler.settings.tree import ClusterSettings, Settings
from tests.api.rig import TOKENS, ApiRig, Usage, grant_default_rights
from tests.support.kube_server import KubeServer


def wait_for(predicate: Callable[[], bool], *, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_api_serves_beside_the_running_loop_and_stops_with_it() -> None:
    settings = Settings.model_validate({"loop": {"interval": "1s"}})
    logger = logging.getLogger("tests.api.assembly")
    clock = SystemClock()
    with (
        KubeServer(clock=lambda: datetime.now(UTC) - timedelta(hours=4)) as kube,
        ApiClient(kube.configuration()) as api_client,
    ):
        grant_default_rights(kube)
        client = KubeClient(api_client, timeout=timedelta(seconds=5))
        cluster = KueueCluster(client=client, settings=settings.cluster)
        shared = build_shared_state(
            settings, client=client, cluster=cluster, clock=clock, logger=logger
        )
        service = build_service(
            settings,
            cluster=cluster,
            metrics=Usage(),
            clock=clock,
            logger=logger,
            shared=shared,
        )
        api = build_api(
            ApiSettings(host="127.0.0.1", port=0),
            cluster_settings=settings.cluster,
            client=client,
            cluster=cluster,
            loop=service,
            clock=clock,
            logger=logger,
        )
        service.servers.append(api)
        service.start()
        try:
            url = f"http://127.0.0.1:{api.server.port}"
            wait_for(lambda: httpx.get(f"{url}/readyz").status_code == 200)
            metrics = httpx.get(f"{url}/metrics").text
            assert "idle_gpu_autoscaler_cycles_total" in metrics
        finally:
            service.stop()
        assert not any(t.name == "api-server" for t in threading.enumerate())
        assert kube.errors == []


def test_another_router_is_served_behind_the_same_door_with_its_own_statuses() -> None:
    router = APIRouter(prefix="/api/v1/extra")
    checked: list[bool] = []

    @router.get("/thing")
    def thing(valid: bool = False) -> dict[str, str]:
        if not valid:
            raise HTTPException(400, "bad parameters")  # kept: it is the router's contract
        return {"ok": "yes"}

    @router.post("/thing")
    def change() -> dict[str, str]:
        return {"changed": "yes"}

    with ApiRig(routers=[router]) as rig:
        assert rig.reader.get("/api/v1/extra/thing").status_code == 400
        assert rig.reader.get("/api/v1/extra/thing?valid=true").json() == {"ok": "yes"}
        assert rig.http.post("/api/v1/extra/thing").status_code == 401
        auth = build_auth(rig.settings, cluster_settings=ClusterSettings(), client=rig.client)
        access = MetricsApiAccess(auth, readers=frozenset(), reads_open=False)
        checked += [access.authenticate(token) is not None for token in (TOKENS["alice"], "x")]
    assert checked == [True, False]
