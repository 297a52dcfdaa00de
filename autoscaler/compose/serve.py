"""`serve`: the real adapters (Kubernetes, Prometheus, the runtime-state ConfigMap, leader
election) wired into the service, run until SIGTERM. `build_replica` builds one replica as
`serve` runs it, for tests that run two.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from datetime import timedelta
from pathlib import Path
from types import FrameType

from autoscaler.adapters.kuberay.cached_source import CachedRayClusters
from autoscaler.adapters.kuberay.fleet import FleetReader
from autoscaler.adapters.kuberay.source import ListedRayClusters, RayClusterSource
from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.leader import LeaderElector, default_identity
from autoscaler.adapters.kueue.cached import CachedKueueCluster
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.kueue.configuration import list_configuration
from autoscaler.adapters.prometheus.promql import QueryTemplates
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.adapters.state.store import RuntimeStateStore
from autoscaler.client.next_steps import no_kubernetes_credentials
from autoscaler.compose.api import (
    build_api,
    build_auth,
    keda_metrics_router,
    snooze_notifications,
)
from autoscaler.compose.check_cluster import EXIT_UNREACHABLE, pointed
from autoscaler.compose.kueue_presence import refuse_kueue_off_beside_kueue
from autoscaler.compose.loop_parts import SharedState
from autoscaler.compose.managers import build_actuator, build_pending
from autoscaler.compose.service import Service, StopOnly, build_service
from autoscaler.core.clock import SystemClock
from autoscaler.core.errors import ConfigError
from autoscaler.core.logs import configure_logging
from autoscaler.core.ports import (
    Clock,
    ClusterReader,
    MetricSource,
    Server,
)
from autoscaler.domain.policy.management import Manager
from autoscaler.engine.acting.context import always_leads
from autoscaler.settings.rules import longest_loading
from autoscaler.settings.tree import ClusterSettings, QuerySettings, Settings

# No usable Kubernetes configuration: the code `check-config --cluster` gives (docs/CLI.md).
EXIT_NO_CLUSTER = EXIT_UNREACHABLE


def query_templates(queries: QuerySettings) -> QueryTemplates:
    """The configured PromQL templates, the built-in ones where unset."""
    chosen = {key: value for key, value in queries.model_dump().items() if value is not None}
    return QueryTemplates(**chosen)


def build_metric_source(settings: Settings) -> PrometheusMetricSource:
    return PrometheusMetricSource(
        prometheus=settings.prometheus,
        policy=settings.policy,
        templates=query_templates(settings.prometheus.queries),
        longest_loading=longest_loading(settings),
    )


def add_rest_api(
    service: Service,
    settings: Settings,
    *,
    client: KubeClient,
    cluster: ClusterReader,
    clock: Clock,
    logger: logging.Logger,
) -> None:
    """The REST API (and KEDA's metrics-api endpoint) on one HTTP port beside the loop."""
    auth = build_auth(settings.api, cluster_settings=settings.cluster, client=client)
    routers = []
    if service.keda_answers is not None:
        routers.append(keda_metrics_router(service.keda_answers, auth=auth, settings=settings))
    service.servers.append(
        build_api(
            settings.api,
            cluster_settings=settings.cluster,
            client=client,
            cluster=cluster,
            loop=service,
            clock=clock,
            logger=logger,
            auth=auth,
            routers=routers,
            policy=service.policy,
            notices=snooze_notifications(service.notifications),
        )
    )


def build_cluster(settings: Settings, client: KubeClient) -> KueueCluster:
    """Watch caches by default, so a steady cycle makes no list calls. Kueue's objects are
    read only while its actuator is enabled."""
    read_kueue = settings.actuators.switch(Manager.KUEUE)
    if settings.watch_cache.enabled:
        return CachedKueueCluster(
            client=client,
            settings=settings.cluster,
            cache=settings.watch_cache,
            read_kueue=read_kueue,
        )
    return KueueCluster(client=client, settings=settings.cluster, read_kueue=read_kueue)


def build_reader(
    settings: Settings, *, client: KubeClient, kueue: KueueCluster, logger: logging.Logger
) -> FleetReader:
    """Kueue's rows, and the RayClusters' own while a suspend actuator is enabled (with none,
    exactly Kueue's reads: the RayCluster source is never asked)."""
    rayclusters: RayClusterSource
    if settings.watch_cache.enabled:
        rayclusters = CachedRayClusters(
            client=client,
            settings=settings.cluster,
            cache=settings.watch_cache,
            logger=logger.getChild("rayclusters"),
        )
    else:
        rayclusters = ListedRayClusters(
            client=client, settings=settings.cluster, logger=logger.getChild("rayclusters")
        )
    return FleetReader(
        kueue=kueue,
        rayclusters=rayclusters,
        enabled=settings.actuators.enabled(),
        logger=logger.getChild("rayclusters"),
    )


def build_shared_state(
    settings: Settings,
    *,
    client: KubeClient,
    cluster: KueueCluster,
    clock: Clock,
    logger: logging.Logger,
) -> SharedState:
    """The one runtime-state store (the ConfigMap) and workload actuator of this process: the
    loop, its listeners and the API all use these."""
    state = RuntimeStateStore(
        client=client,
        name=settings.cluster.runtime_state_config_map,
        namespace=settings.cluster.service_namespace,
        audit_limit=settings.api.audit_record_limit,
        attempts=settings.api.write_attempts,
        logger=logger.getChild("state"),
    )
    actuator = build_actuator(settings, client=client, cluster=cluster, clock=clock)
    return SharedState(store=state, actuator=actuator)


def build_elector(settings: Settings, client: KubeClient, logger: logging.Logger) -> LeaderElector:
    return LeaderElector(
        client=client,
        settings=settings.leader_election,
        namespace=settings.cluster.service_namespace,
        identity=default_identity(),
        clock=SystemClock(),
        logger=logger.getChild("leader"),
    )


def build_replica(
    settings: Settings,
    *,
    client: KubeClient,
    clock: Clock,
    logger: logging.Logger,
    elector: LeaderElector | None,
    metrics: MetricSource | None = None,
) -> Service:
    """Everything `serve` runs, built and not started; `metrics`: Prometheus unless given.
    Raises ConfigError when Kueue's actuator is off on a cluster that serves Kueue."""
    refuse_kueue_off_beside_kueue(settings, client)
    cluster = build_cluster(settings, client)
    reader = build_reader(settings, client=client, kueue=cluster, logger=logger)
    shared = build_shared_state(
        settings, client=client, cluster=cluster, clock=clock, logger=logger
    )
    service = build_service(
        settings,
        cluster=reader,
        metrics=metrics or build_metric_source(settings),
        clock=clock,
        logger=logger,
        leads=elector.leads if elector else always_leads,
        shared=shared,
        features=cluster,  # Kueue's Configuration, for via-kueue rules' feature gate
        # Who waits for Kueue's and KAI's quota (when-contended rules), per enabled actuator.
        pending=build_pending(
            settings,
            client=client,
            objects=cluster,
            logger=logger.getChild("queues"),
            configuration=lambda: cluster.cycle_kueue_config,  # read in the cycle already
        ),
    )
    # Servers stop in reverse, after the loop: the Lease is released only once the last cycle
    # (and any action in it) is over, and the caches outlive both.
    first: list[Server] = []
    if isinstance(cluster, CachedKueueCluster):
        first.append(StopOnly(lambda: cluster.stop(timedelta(seconds=5))))
    if isinstance(reader.rayclusters, CachedRayClusters):
        rays = reader.rayclusters
        first.append(StopOnly(lambda: rays.stop(timedelta(seconds=5))))
    if elector is not None:
        first.append(StopOnly(lambda: elector.stop(timeout=5)))
    service.servers[:0] = first
    add_rest_api(service, settings, client=client, cluster=reader, clock=clock, logger=logger)
    return service


def log_kueue_configuration(settings: Settings, client: KubeClient, logger: logging.Logger) -> None:
    """One line at start-up: whether Kueue's Configuration is readable and whether its
    waitForPodsReady is on (one list call; the cycles then read it themselves)."""
    if Manager.KUEUE not in settings.actuators.enabled():
        return
    config = list_configuration(client, settings.cluster.kueue_configuration)
    logger.log(logging.INFO if config.readable else logging.WARNING, "%s", config.summary())


def serve(settings: Settings, *, kubeconfig: Path | None = None, context: str | None = None) -> int:
    """Run until SIGTERM or SIGINT, then finish the current cycle and stop. `kubeconfig` and
    `context` point it elsewhere than `cluster.kubeconfig` and `cluster.context`."""
    cluster = pointed(settings.cluster, kubeconfig=kubeconfig, context=context)
    settings = settings.model_copy(update={"cluster": cluster})
    client = kube_client(cluster)
    if client is None:
        return EXIT_NO_CLUSTER
    logger = configure_logging(format_name=settings.logging.format, level=settings.logging.level)
    elector = build_elector(settings, client, logger) if settings.leader_election.enabled else None
    service = build_replica(
        settings, client=client, clock=SystemClock(), logger=logger, elector=elector
    )
    log_kueue_configuration(settings, client, logger)
    if elector is not None:
        elector.start()
    stop = stop_on_signals(logger)
    mode = "dry-run: deciding and reporting only" if settings.policy.dry_run else "acting"
    logger.info("idle-gpu-autoscaler serving (%s)", mode)
    service.start()
    stop.wait()
    service.stop()
    logger.info("stopped cleanly")
    return 0


def kube_client(cluster: ClusterSettings) -> KubeClient | None:
    """The client of the configured cluster; None, once one line on stderr has said what to
    set, when there are no Kubernetes credentials to load (not in a pod, no kubeconfig)."""
    try:
        return KubeClient.from_settings(cluster)
    except ConfigError as exc:
        said = no_kubernetes_credentials(
            exc.problems,
            kubeconfig=cluster.kubeconfig,
            in_cluster="KUBERNETES_SERVICE_HOST" in os.environ,
            environ=os.environ,
        )
        print(f"error: {said}", file=sys.stderr)
        return None


def stop_on_signals(logger: logging.Logger) -> threading.Event:
    """Set on SIGTERM or SIGINT."""
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        logger.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stop
