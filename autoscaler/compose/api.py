"""Builds the API for the composition root: call `build_api` once in `serve`.

    auth = build_auth(settings.api, cluster_settings=settings.cluster, client=client)
    keda = keda_metrics_router(answers, auth=auth, settings=settings)  # when KEDA is on
    api = build_api(settings.api, cluster_settings=settings.cluster, client=client,
                    cluster=cluster, service=service, clock=clock, logger=logger,
                    auth=auth, routers=[keda])
    service.servers.append(api)   # start(): uvicorn; stop(): the reverse

Pass `notices=snooze_notifications(service.notifications)` so the signed links work and a
snooze is told where the loop's warnings go.

Only the API: the loop's metrics, its listeners and the runtime-state store are the service's
(compose/service.py), shared here. The same parts serve every replica, leader or not: a
person's change goes to Kubernetes, never to process memory. `build_api_on` takes its parts
(`Backends`) ready-made, so the demo can serve the same app over its simulated cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from fastapi import APIRouter, FastAPI

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.reviews import KubernetesReviews
from autoscaler.api.access import Access, admin_target
from autoscaler.api.app import create_app
from autoscaler.api.connections import ConnectionLimits
from autoscaler.api.context import NO_SNOOZE_NOTIFICATIONS, ApiContext, SnoozeNotifications
from autoscaler.api.problems import error_responses
from autoscaler.api.server import ApiServer
from autoscaler.api.static_tokens import StaticTokens
from autoscaler.compose.loop_parts import SharedState
from autoscaler.compose.notify import Notifications
from autoscaler.core.ports import (
    Authenticator,
    Authorizer,
    Clock,
    ClusterReader,
    StateStore,
    WorkloadActuator,
)
from autoscaler.domain.access import Identity, Target, Verdict, read_target
from autoscaler.domain.policy.decisions import Policy
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.engine.metrics.telemetry import ServiceMetrics
from autoscaler.keda.answers import KedaAnswers
from autoscaler.keda.http import ERROR_STATUSES, keda_router
from autoscaler.settings.api import ApiSettings
from autoscaler.settings.tree import ClusterSettings, Settings

Auth = tuple[Authenticator, Authorizer]


class LoopView(Protocol):
    """What the API takes of the service beside it (`compose.service.Service`)."""

    @property
    def store(self) -> SnapshotStore: ...

    @property
    def telemetry(self) -> ServiceMetrics: ...

    @property
    def shared(self) -> SharedState: ...


@dataclass
class Api:
    app: FastAPI
    server: ApiServer
    context: ApiContext

    def start(self) -> None:
        self.server.start()

    def stop(self) -> None:
        self.server.stop()


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
    cluster: ClusterReader,
    loop: LoopView,
    clock: Clock,
    logger: logging.Logger,
    auth: Auth | None = None,
    routers: Sequence[APIRouter] = (),
    policy: Policy | None = None,
    notices: SnoozeNotifications = NO_SNOOZE_NOTIFICATIONS,
) -> Api:
    """`loop`: the service's snapshots, metrics and runtime state (`Service` fits);
    `policy`: the loop's, whose rules `explain` and exemptions match against;
    `auth`: from `build_auth`, when another part (the KEDA router) checks tokens too;
    `routers`: more endpoints served on the same port, behind the same middleware;
    `notices`: the link signer and the loop's teller (`snooze_notifications`); default: Events
    only."""
    admin = admin_target(
        settings.admin,
        config_map=cluster_settings.runtime_state_config_map,
        namespace=cluster_settings.service_namespace,
    )
    backends = Backends(
        cluster=cluster,
        actuator=loop.shared.actuator,
        state=loop.shared.store,
        auth=auth or build_auth(settings, cluster_settings=cluster_settings, client=client),
        admin=admin,
    )
    return build_api_on(
        settings,
        backends=backends,
        store=loop.store,
        telemetry=loop.telemetry,
        clock=clock,
        logger=logger.getChild("api"),
        routers=routers,
        policy=policy,
        notices=notices,
    )


def build_api_on(
    settings: ApiSettings,
    *,
    backends: Backends,
    store: SnapshotStore,
    telemetry: ServiceMetrics,
    clock: Clock,
    logger: logging.Logger,
    routers: Sequence[APIRouter] = (),
    policy: Policy | None = None,
    notices: SnoozeNotifications = NO_SNOOZE_NOTIFICATIONS,
) -> Api:
    """The API over any `backends`, serving the loop's `telemetry` on /metrics; `logger` is
    used as given."""
    authenticator, authorizer = backends.auth
    context = ApiContext(
        settings=settings,
        store=store,
        cluster=backends.cluster,
        actuator=backends.actuator,
        state=backends.state,
        access=Access(authorizer, admin=backends.admin, reads_open=settings.reads_open),
        metrics=telemetry,
        registry=telemetry.registry,
        clock=clock,
        logger=logger,
        policy=policy,
        notices=notices,
    )
    app = create_app(context, authenticator=authenticator, routers=routers)
    server = ApiServer(
        app,
        host=settings.host,
        port=settings.port,
        max_header_bytes=settings.max_header_bytes,
        limits=ConnectionLimits(
            max_connections=settings.max_connections,
            header_timeout_s=settings.header_timeout.total_seconds(),
            idle_timeout_s=settings.idle_timeout.total_seconds(),
        ),
    )
    return Api(app=app, server=server, context=context)


def snooze_notifications(notifications: Notifications) -> SnoozeNotifications:
    """What the API takes of `build_notifications`: the link signer (the link routes 404
    without one), and the loop's sink and route a snooze is told through."""
    return SnoozeNotifications(links=notifications.signer, loop=notifications.teller)


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


@dataclass(frozen=True)
class MetricsApiAccess:
    """Who may read KEDA's metrics-api endpoint: the usernames `keda.metricsApiReaders`
    names when it names any, else whoever may read the namespace asked about as the listing
    asks it (`list` on Kueue Workloads there; anyone with a valid token under `readsOpen`)."""

    auth: Auth
    readers: frozenset[str]
    reads_open: bool

    def authenticate(self, token: str) -> Identity | None:
        return self.auth[0].authenticate(token)

    def authorize(self, who: Identity, namespace: str) -> Verdict:
        if self.readers:
            named = who.username in self.readers
            return Verdict(named, f"{'one' if named else 'not one'} of keda.metricsApiReaders")
        if self.reads_open:
            return Verdict(True, "reads are open (api.readsOpen)")
        return self.auth[1].authorize(who, read_target(namespace))


def keda_metrics_router(answers: KedaAnswers, *, auth: Auth, settings: Settings) -> APIRouter:
    """KEDA's metrics-api endpoint, behind the same tokens and read rights as the API."""
    access = MetricsApiAccess(
        auth,
        readers=frozenset(settings.keda.metrics_api_readers),
        reads_open=settings.api.reads_open,
    )
    return keda_router(
        answers=answers,
        authenticate=access.authenticate,
        authorize=access.authorize,
        error_responses=error_responses(*ERROR_STATUSES),  # the API's Problem bodies
    )
