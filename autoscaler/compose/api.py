"""Builds the API's parts for the composition root: call `build_api` once in `serve`.

    auth = build_auth(settings.api, cluster_settings=settings.cluster, client=client)
    keda = keda_router(answers=answers, authenticate=token_checker(auth))  # when KEDA is on
    api = build_api(settings.api, cluster_settings=settings.cluster, client=client,
                    cluster=cluster, actuator=actuator, store=service.store, clock=clock,
                    logger=logger, auth=auth, routers=[keda])
    service.servers.append(api)   # start(): subscribers, then uvicorn; stop(): the reverse

The same parts serve every replica: changes go to Kubernetes, never to process memory.
`build_api_on` takes those parts (`Backends`) ready-made, so the demo can serve the same
app over its simulated cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from fastapi import APIRouter, FastAPI
from prometheus_client import CollectorRegistry

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.reviews import KubernetesReviews
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.state.store import RuntimeStateStore
from autoscaler.api.access import Access, admin_target
from autoscaler.api.app import create_app
from autoscaler.api.context import ApiContext
from autoscaler.api.server import ApiServer
from autoscaler.api.static_tokens import StaticTokens
from autoscaler.core.ports import (
    Authenticator,
    Authorizer,
    Clock,
    ClusterReader,
    StateStore,
    WorkloadActuator,
)
from autoscaler.domain.access import Target
from autoscaler.engine.exemption_limits import ExemptionLimiter
from autoscaler.engine.loop_audit import LoopAuditor
from autoscaler.engine.snapshots import Listener, SnapshotStore
from autoscaler.engine.telemetry import ServiceMetrics
from autoscaler.settings.api import ApiSettings
from autoscaler.settings.tree import ClusterSettings

Auth = tuple[Authenticator, Authorizer]


@dataclass
class Api:
    app: FastAPI
    server: ApiServer
    context: ApiContext
    listeners: tuple[Listener, ...]  # metrics, audit of the loop, exemption limit
    store: SnapshotStore
    _unsubscribe: list[Callable[[], None]] = field(default_factory=list)

    def start(self) -> None:
        self._unsubscribe = [self.store.subscribe(listener) for listener in self.listeners]
        self.server.start()

    def stop(self) -> None:
        self.server.stop()
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []


@dataclass(frozen=True)
class Backends:
    """What the API reads and changes besides the snapshot store: Kubernetes in `serve`
    (`build_api`), the simulated cluster in the demo."""

    cluster: ClusterReader
    actuator: WorkloadActuator
    state: StateStore
    auth: Auth
    admin: Target  # the permission `require_admin` asks for


def build_api(
    settings: ApiSettings,
    *,
    cluster_settings: ClusterSettings,
    client: KubeClient,
    cluster: KueueCluster,
    actuator: WorkloadActuator,
    store: SnapshotStore,
    clock: Clock,
    logger: logging.Logger,
    registry: CollectorRegistry | None = None,
    auth: Auth | None = None,
    routers: Sequence[APIRouter] = (),
) -> Api:
    """`auth`: from `build_auth`, when another part (the KEDA router) checks tokens too;
    `routers`: more endpoints served on the same port, behind the same middleware."""
    log = logger.getChild("api")
    admin = admin_target(
        settings.admin,
        config_map=cluster_settings.runtime_state_config_map,
        namespace=cluster_settings.service_namespace,
    )
    state = RuntimeStateStore(
        client=client,
        name=cluster_settings.runtime_state_config_map,
        namespace=cluster_settings.service_namespace,
        audit_limit=settings.audit_record_limit,
        attempts=settings.write_attempts,
        logger=log,
    )
    backends = Backends(
        cluster=cluster,
        actuator=actuator,
        state=state,
        auth=auth or build_auth(settings, cluster_settings=cluster_settings, client=client),
        admin=admin,
    )
    return build_api_on(
        settings,
        backends=backends,
        store=store,
        clock=clock,
        logger=log,
        registry=registry,
        routers=routers,
    )


def build_api_on(
    settings: ApiSettings,
    *,
    backends: Backends,
    store: SnapshotStore,
    clock: Clock,
    logger: logging.Logger,
    registry: CollectorRegistry | None = None,
    routers: Sequence[APIRouter] = (),
) -> Api:
    """The API over any `backends`; `logger` is used as given."""
    registry = registry if registry is not None else CollectorRegistry()
    authenticator, authorizer = backends.auth
    metrics = ServiceMetrics(registry, clock=clock)
    context = ApiContext(
        settings=settings,
        store=store,
        cluster=backends.cluster,
        actuator=backends.actuator,
        state=backends.state,
        access=Access(authorizer, admin=backends.admin),
        metrics=metrics,
        registry=registry,
        clock=clock,
        logger=logger,
    )
    limiter = ExemptionLimiter(
        writer=backends.actuator,
        audit=backends.state,
        clock=clock,
        maximum=settings.max_exemption,
        allow_indefinite=settings.allow_indefinite_exemption,
        logger=logger,
    )
    auditor = LoopAuditor(audit=backends.state, metrics=metrics, logger=logger)
    app = create_app(context, authenticator=authenticator, routers=routers)
    return Api(
        app=app,
        server=ApiServer(app, host=settings.host, port=settings.port),
        context=context,
        listeners=(metrics.observe, auditor, limiter),
        store=store,
    )


def build_auth(
    settings: ApiSettings, *, cluster_settings: ClusterSettings, client: KubeClient
) -> Auth:
    """The token check and the permission check the settings ask for."""
    if settings.auth.mode == "static":
        assert settings.auth.static_tokens_file is not None  # the settings require it
        admin = admin_target(
            settings.admin,
            config_map=cluster_settings.runtime_state_config_map,
            namespace=cluster_settings.service_namespace,
        )
        tokens = StaticTokens.load(settings.auth.static_tokens_file, admin_target=admin)
        return tokens, tokens
    reviews = KubernetesReviews(client, audiences=tuple(settings.auth.audiences))
    return reviews, reviews


def token_checker(auth: Auth) -> Callable[[str], bool]:
    """`authenticate` for the KEDA metrics-api router: is this a valid token?"""
    authenticator = auth[0]
    return lambda token: authenticator.authenticate(token) is not None
