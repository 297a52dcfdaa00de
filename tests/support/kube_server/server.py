"""KubeServer: the test Kubernetes API server a fixture starts, drives and closes."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..crd_validation import DEFAULT_CRD_DIR, load_crd_schemas
from .api import ResourceApi
from .catalog import DEFAULT_RESOURCES, Catalog, ResourceType
from .faults import Faults, RecordedRequest, RequestLog
from .http import Backend, HttpServer
from .objects import Change
from .reviews import Reviews
from .store import Store

if TYPE_CHECKING:
    from kubernetes.client import Configuration


def _utcnow() -> datetime:
    return datetime.now(UTC)


class KubeServer:
    """An in-process Kubernetes API server on 127.0.0.1 and a free port.

    with KubeServer(disabled_versions={"keda.sh/v1alpha1"}) as server:
        server.store.put(make_workload("ns", "wl").build())
        with kubernetes.client.ApiClient(server.configuration()) as api_client:
            ...
        assert server.requests.writes()[0].body == {"spec": {"active": False}}
    """

    def __init__(
        self,
        *,
        disabled_versions: Iterable[str] = (),
        validate_crds: bool = True,
        crd_dir: Path = DEFAULT_CRD_DIR,
        accepted_tokens: Iterable[str] | None = None,
        history_limit: int = 1000,
        bookmark_interval_s: float | None = None,
        clock: Callable[[], datetime] = _utcnow,
        resources: Iterable[ResourceType] = DEFAULT_RESOURCES,
    ) -> None:
        self.catalog = Catalog(resources, disabled=disabled_versions)
        self.store = Store(self.catalog, clock=clock, history_limit=history_limit)
        self.reviews = Reviews()
        self.faults = Faults()
        self.requests = RequestLog()
        schemas = load_crd_schemas(crd_dir) if validate_crds else None
        self._backend = Backend(
            catalog=self.catalog,
            api=ResourceApi(store=self.store, reviews=self.reviews, schemas=schemas),
            faults=self.faults,
            requests=self.requests,
            accepted_tokens=None if accepted_tokens is None else frozenset(accepted_tokens),
            bookmark_interval_s=bookmark_interval_s,
        )
        self._http: HttpServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> KubeServer:
        self._http = HttpServer(self._backend)
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="kube-test-server",
            daemon=True,
        )
        self._thread.start()
        return self

    @property
    def url(self) -> str:
        if self._http is None:
            raise RuntimeError("KubeServer is not started")
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    @property
    def errors(self) -> list[BaseException]:
        """Unexpected exceptions inside the server (answered as 500): a test may assert none."""
        return list(self._backend.errors)

    def on_change(self, listener: Callable[[Change], None]) -> Callable[[], None]:
        """Call `listener(change)` after every committed write; returns an unsubscribe."""
        return self.store.on_change(listener)

    def answer_get(self, path: str, answer: Callable[[RecordedRequest], tuple[int, Any]]) -> None:
        """Serve GET `path` with `answer(request) -> (status, JSON body)`: an API the store
        does not model, such as Kueue's visibility API (its discovery document included)."""
        self._backend.routes[path.rstrip("/")] = answer

    def drop_watches(self) -> None:
        """End every open watch stream cleanly, as an API server restart or load balancer would."""
        self.store.drop_watches()

    def configuration(self, *, token: str | None = "test-token") -> Configuration:
        """A kubernetes client Configuration pointing at this server, with a bearer token."""
        from kubernetes.client import Configuration

        configuration = Configuration(host=self.url)
        if token is not None:
            configuration.api_key = {"authorization": token}
            configuration.api_key_prefix = {"authorization": "Bearer"}
        return configuration

    def close(self) -> None:
        """End watches, stop serving, shut open connections and join every server thread."""
        self.store.close()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http.close_connections()
        if self._thread is not None:
            self._thread.join()
        self._http, self._thread = None, None

    def __enter__(self) -> KubeServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
