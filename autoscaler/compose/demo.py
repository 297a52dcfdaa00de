"""`demo`: the real service on the simulated cluster, exporter and clock, with the REST API and
the KEDA scaler on loopback.
"""

from __future__ import annotations

import argparse
import logging
import secrets
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

from autoscaler.api.access import admin_target
from autoscaler.api.static_tokens import EVERY_NAMESPACE, StaticToken, StaticTokens
from autoscaler.compose.api import (
    Api,
    Backends,
    build_api_on,
    keda_metrics_router,
    snooze_notifications,
)
from autoscaler.compose.loop_parts import SharedState
from autoscaler.compose.service import Service, build_service
from autoscaler.core.ports import (
    Clock,
    ClusterReader,
    MetricSource,
    PendingWork,
    WorkloadActuator,
)
from autoscaler.demo.endpoints import Endpoints
from autoscaler.demo.run import ExtraServers, KeepLink, quiet_logger, run_demo
from autoscaler.demo.scenario import Arrival
from autoscaler.demo.servers import LOOPBACK, free_port, running, serve_on_loopback, sign_links
from autoscaler.demo.story import BuildService, Configure, Outcome, World
from autoscaler.domain.access import Target
from autoscaler.domain.notices.notifications import NoticeKind, Notification
from autoscaler.settings.tree import Settings
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.state import SimulatedRuntimeState


def demo(args: argparse.Namespace) -> int:
    """The embedded default: the real service on a simulated cluster, exporter and clock,
    with the REST API and the KEDA scaler on loopback for the story and after it, and Keep
    links signed with a key of the run's own (its file removed on the way out)."""
    _ctrl_c_interrupts()
    with tempfile.TemporaryDirectory(prefix="idle-gpu-demo-") as folder:
        parts = demo_parts(link_key=new_link_key(Path(folder)))
        return run_demo(
            args,
            build_service=parts.build_service,
            configure=parts.configure,
            extra_servers=parts.extra_servers,
            keep_link=parts.keep_link,
        )


def _ctrl_c_interrupts() -> None:
    """Ctrl-C ends the demo (status 130) however it was started: a process started in the
    background by a script inherits SIGINT ignored (POSIX shells without job control do so),
    and Python then never turns it into KeyboardInterrupt, so `--serve` would serve on."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.default_int_handler)


@dataclass(frozen=True)
class DemoParts:
    """What `run_demo` and `play_demo` take to serve as `demo` does: the service's builder,
    the loopback ports, and the servers (the REST API the story's CLI step calls, KEDA)."""

    build_service: BuildService
    configure: Configure
    extra_servers: ExtraServers
    keep_link: KeepLink | None = None  # with a link key: the story's first warning's link


def demo_parts(*, token: str | None = None, link_key: Path | None = None) -> DemoParts:
    """A fresh token (unless given) and KEDA port; the API binds its own free port, unless
    `link_key` (a signing key's file) turns Keep links on: they need the API's address
    before the service is built, so its port is chosen first, as KEDA's is."""
    token = token or new_token()
    keda_port = free_port(LOOPBACK)
    api_port = 0 if link_key is None else free_port(LOOPBACK)

    def configure(settings: Settings) -> Settings:
        settings = serve_on_loopback(settings, keda_port=keda_port, api_port=api_port)
        if link_key is None:
            return settings
        return sign_links(settings, base_url=f"http://{LOOPBACK}:{api_port}", key_file=link_key)

    @contextmanager
    def servers(world: World) -> Iterator[Endpoints]:
        service = world.service
        assert isinstance(service, Service)  # made by `build_demo_service`
        api = demo_api(service, world=world, token=token)
        with running([*service.servers, api]):
            yield Endpoints(
                rest_url=f"http://{LOOPBACK}:{api.server.port}",
                grpc_address=f"{LOOPBACK}:{keda_port}",
                token=token,
            )

    return DemoParts(
        build_service=build_demo_service,
        configure=configure,
        extra_servers=servers,
        keep_link=None if link_key is None else first_keep_link,
    )


DEMO_RECIPIENT = "demo"  # whom the link was "sent" to: a snooze by it is by `link:demo`


def new_link_key(folder: Path) -> Path:
    """A fresh signing key in a file only this user reads, as a mounted Secret would hold it."""
    path = folder / "links-signing-key"
    path.touch(mode=0o600)
    path.write_text(secrets.token_urlsafe(48))
    return path


def first_keep_link(world: World, live: Outcome, endpoints: Endpoints) -> Endpoints:
    """`endpoints` with the Keep link (the shortest snooze) the last warning of the story's
    first warned workload carried, signed by the service's own signer: what its notification
    would have held. Unchanged when nothing was warned."""
    service = world.service
    assert isinstance(service, Service)  # made by `build_demo_service`
    signer = service.notifications.signer
    order = [arrival.spec.known_as for arrival in sorted(world.scenario.arrivals, key=_minute)]
    warned = [
        (order.index(name), row, watch.warnings[-1])
        for row in live.final.workloads
        if (name := live.names.get(row.ref)) in order
        and (watch := live.watched.get(name)) is not None
        and watch.warnings
    ]
    if signer is None or not warned:
        return endpoints
    _, row, warned_at = min(warned, key=lambda found: found[0])
    notification = Notification(
        kind=NoticeKind.WARNING,
        workload=row.ref,
        uid=row.info.uid,
        owner=row.info.owner,
        rule=row.decision.rule.name,
        reason=row.decision.reason,
        at=warned_at,
        warned_at=warned_at,
        manager=row.info.manager,
    )
    links = signer.links(notification, recipient=DEMO_RECIPIENT, now=world.clock.now())
    return replace(endpoints, keep_url=links[0].url) if links else endpoints


def _minute(arrival: Arrival) -> float:
    return arrival.minute


def build_demo_service(
    settings: Settings,
    *,
    cluster: ClusterReader,
    actuator: WorkloadActuator,
    metrics: MetricSource,
    clock: Clock,
    logger: logging.Logger,
    pending: PendingWork,
) -> Service:
    """The same parts as `serve` (guards, loop audit, exemption limit), over an in-memory
    runtime state that the API shares; `pending`: the simulated Kueue's queues; the
    simulated cluster answers for Kueue's Configuration (its feature gates) too."""
    assert isinstance(cluster, SimulatedCluster)
    state = SimulatedRuntimeState(cluster=cluster, audit_limit=settings.api.audit_record_limit)
    shared = SharedState(store=state, actuator=actuator, savings_refresh=timedelta(0))
    return build_service(
        settings,
        cluster=cluster,
        metrics=metrics,
        clock=clock,
        logger=logger,
        bind_host=LOOPBACK,
        shared=shared,
        pending=pending,
        features=cluster,  # the emulated Kueue's gates, for via-kueue rules
    )


def demo_api(service: Service, *, world: World, token: str) -> Api:
    """The REST API (with KEDA's metrics-api router) over one world's service."""
    backends = simulated_backends(
        world.cluster, settings=world.settings, token=token, shared=service.shared
    )
    answers, auth = service.keda_answers, backends.auth
    routers = [keda_metrics_router(answers, auth=auth, settings=world.settings)] if answers else []
    return build_api_on(
        world.settings.api,
        backends=backends,
        store=service.store,
        telemetry=service.telemetry,
        clock=world.clock,
        logger=quiet_logger().getChild("api"),
        routers=routers,
        policy=service.policy,
        notices=snooze_notifications(service.notifications),
    )


DEMO_USER = "demo-admin"


def new_token() -> str:
    """A fresh bearer token per run: nothing long-lived to leak from a demo."""
    return secrets.token_urlsafe(24)


def demo_tokens(token: str, *, admin: Target) -> StaticTokens:
    """The static-token authenticator and authorizer, knowing only the demo's admin."""
    entry = StaticToken(token=token, username=DEMO_USER, namespaces=[EVERY_NAMESPACE], admin=True)
    return StaticTokens((entry,), admin_target=admin)


def simulated_backends(
    cluster: SimulatedCluster, *, settings: Settings, token: str, shared: SharedState
) -> Backends:
    """Everything `build_api_on` needs besides the snapshot store, for one demo world;
    `shared`: the service's runtime state and writes."""
    admin = admin_target(
        settings.api.admin,
        config_map=settings.cluster.runtime_state_config_map,
        namespace=settings.cluster.service_namespace,
    )
    tokens = demo_tokens(token, admin=admin)
    return Backends(
        cluster=cluster,
        actuator=shared.actuator,
        state=shared.store,
        auth=(tokens, tokens),
        admin=admin,
    )
