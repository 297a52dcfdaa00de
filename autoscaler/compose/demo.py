"""`demo`: the real service on the simulated cluster, exporter and clock, with the REST API and
the KEDA scaler on loopback.
"""

from __future__ import annotations

import argparse
import logging
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from autoscaler.adapters.state.guards import RuntimeGuardStore
from autoscaler.api.access import admin_target
from autoscaler.api.static_tokens import EVERY_NAMESPACE, StaticToken, StaticTokens
from autoscaler.compose.api import Backends, build_api_on, token_checker
from autoscaler.compose.service import Service, build_service
from autoscaler.core.ports import Clock, ClusterReader, MetricSource, WorkloadActuator
from autoscaler.demo.run import Endpoint, quiet_logger, run_demo
from autoscaler.demo.servers import LOOPBACK, free_port, running, serve_on_loopback
from autoscaler.demo.story import World
from autoscaler.domain.access import Target
from autoscaler.keda.http import keda_router
from autoscaler.settings.tree import Settings
from autoscaler.sim.actuator import SimulatedActuator
from autoscaler.sim.cluster import SimulatedCluster
from autoscaler.sim.state import SimulatedRuntimeState


def demo(args: argparse.Namespace) -> int:
    """The embedded default: the real service on a simulated cluster, exporter and clock,
    with the REST API and the KEDA scaler on loopback for the story and `--duration`."""
    token = new_token()
    keda_port = free_port(LOOPBACK)
    states: dict[int, SimulatedRuntimeState] = {}  # per world: the story and its dry-run replay

    def build(
        settings: Settings, *, cluster: ClusterReader, actuator: WorkloadActuator,
        metrics: MetricSource, clock: Clock, logger: logging.Logger,
    ) -> Service:  # fmt: skip
        """The same guards as `serve`, over an in-memory runtime state the API shares."""
        assert isinstance(cluster, SimulatedCluster)
        limit = settings.api.audit_record_limit
        state = states[id(cluster)] = SimulatedRuntimeState(cluster=cluster, audit_limit=limit)
        return build_service(
            settings, cluster=cluster, actuator=actuator, metrics=metrics, clock=clock,
            logger=logger, bind_host=LOOPBACK,
            guard_store=RuntimeGuardStore(store=state, audit_limit=limit, clock=clock),
        )  # fmt: skip

    @contextmanager
    def servers(world: World) -> Iterator[list[Endpoint]]:
        service = world.service
        assert isinstance(service, Service)  # made by `build`
        backends = simulated_backends(
            world.cluster,
            clock=world.clock,
            settings=world.settings,
            token=token,
            state=states.get(id(world.cluster)),
        )
        answers, check = service.keda_answers, token_checker(backends.auth)
        routers = [keda_router(answers=answers, authenticate=check)] if answers else []
        api = build_api_on(
            world.settings.api,
            backends=backends,
            store=service.store,
            clock=world.clock,
            logger=quiet_logger().getChild("api"),
            routers=routers,
        )
        with running([*service.servers, api]):
            yield [
                ("REST", f"http://{LOOPBACK}:{api.server.port}"),
                ("gRPC", f"{LOOPBACK}:{keda_port}"),
                ("token", token),
            ]

    return run_demo(
        args,
        build_service=build,
        configure=lambda settings: serve_on_loopback(settings, keda_port=keda_port),
        extra_servers=servers,
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
    cluster: SimulatedCluster,
    *,
    clock: Clock,
    settings: Settings,
    token: str,
    state: SimulatedRuntimeState | None = None,
) -> Backends:
    """Everything `build_api_on` needs besides the snapshot store, for one demo world."""
    admin = admin_target(
        settings.api.admin,
        config_map=settings.cluster.runtime_state_config_map,
        namespace=settings.cluster.service_namespace,
    )
    tokens = demo_tokens(token, admin=admin)
    return Backends(
        cluster=cluster,
        actuator=SimulatedActuator(cluster=cluster, clock=clock),
        state=state
        or SimulatedRuntimeState(cluster=cluster, audit_limit=settings.api.audit_record_limit),
        auth=(tokens, tokens),
        admin=admin,
    )
