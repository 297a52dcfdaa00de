"""The HA tests share the session's test API server; each test keeps to its own namespace
(and Lease), and leaves no object and no injected fault behind."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from autoscaler.adapters.kubernetes.client import KubeClient, api_client_for
from autoscaler.adapters.kubernetes.resources import ALLOWED_CALLS
from autoscaler.adapters.kueue.cached import OWNER_WATCH_CALLS
from autoscaler.core.errors import NotFound
from autoscaler.settings.ha import WatchCacheSettings
from tests.support.kube_server import KubeServer

FAST_CACHE = WatchCacheSettings(
    watch_timeout=timedelta(seconds=1),  # a stopping cache notices within a second
    backoff_initial=timedelta(milliseconds=50),
    backoff_max=timedelta(seconds=1),
    sync_timeout=timedelta(seconds=5),
)


def eventually(check: Callable[[], bool], *, within: float = 5.0, what: str = "") -> None:
    """Poll `check` every 10 ms until it holds; fail after `within` seconds."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {within}s: {what or check}")
        time.sleep(0.01)


@pytest.fixture
def kube(kube_server: KubeServer) -> Iterator[KubeServer]:
    kube_server.faults.clear()
    kube_server.requests.clear()
    yield kube_server
    kube_server.faults.clear()


@pytest.fixture
def namespace(kube_server: KubeServer) -> Iterator[str]:
    """The test's own namespace (and `NAME-svc` for its service), emptied after it: its
    Workloads, admitted into the builders' default ClusterQueue, would otherwise hold that
    queue's quota for every later test."""
    name = f"ha-{uuid.uuid4().hex[:8]}"
    yield name
    for owned in (name, f"{name}-svc"):
        kube_server.store.delete_namespace(owned)


class ListCountingClient:
    """Our KubeClient, counting the lists answered (with items, or 404 for a kind the cluster
    does not serve): a watch cache's first list and each relist, seen from outside it."""

    def __init__(self, inner: KubeClient) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.lists = 0

    def list_objects(self, *args: Any, **kwargs: Any) -> Any:
        try:
            listed = self._inner.list_objects(*args, **kwargs)
        except NotFound:
            self._counted()
            raise
        self._counted()
        return listed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _counted(self) -> None:
        with self._lock:
            self.lists += 1


@pytest.fixture
def client(kube: KubeServer) -> Iterator[ListCountingClient]:
    """A client allowed to watch owners too (the cache needs it; see OWNER_WATCH_CALLS)."""
    api = api_client_for(kube.configuration())
    client = KubeClient(
        api, timeout=timedelta(seconds=5), allowed=ALLOWED_CALLS | OWNER_WATCH_CALLS
    )
    yield ListCountingClient(client)
    client.close()
