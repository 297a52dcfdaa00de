"""The real `serve` process warning, snoozing and telling, for tests/e2e: a namespace of its
own whose `idle-gpu-autoscaler.io/notify` annotation names three webhook targets, each a
real receiver on loopback (`team-hook` answers, `slow-hook` hangs past its timeout,
`broken-hook` answers 500), two one-GPU RayClusters whose GPUs sit idle on the live
exporter, and seconds-long windows.

    with NoticeRig.running(kube_server, live_metrics, files=tmp) as rig:
        warning = rig.wait_told("keep", "warning", within=30)
        httpx.post(warning.json()["links"][0]["url"])
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
from prometheus_client.parser import text_string_to_metric_families

from autoscaler.domain import annotations as keys
from tests.conftest import LiveMetrics
from tests.support.builders import make_raycluster
from tests.support.cluster_emulator import ClusterEmulator
from tests.support.kube_server import ApiError, Change, KubeServer
from tests.support.prom import Gpu, free_port
from tests.support.seeding import BackdatedClock, gpus_of, seed_queues, submit, workload_of
from tests.support.serve_process import ServeProcess, write_config, write_kubeconfig
from tests.support.webhook_receiver import WEBHOOK_SECRET, Received, WebhookReceiver

T = TypeVar("T")
TARGETS = ("team-hook", "slow-hook", "broken-hook")
TIMEOUTS = {"team-hook": "2s", "slow-hook": "1s", "broken-hook": "1s"}
RAYCLUSTERS = ("keep", "clear")
WARN_BEFORE_S = 6  # room to follow a link before the stop it warns of
MAX_SNOOZE_S = 8  # the rule's bound
LINK_SNOOZE_S = 30  # what a link asks: longer than the bound, so it is clipped
LINK_KEY = b"the-links-signing-key-of-at-least-32-bytes"
CYCLE = re.compile(r"^cycle \d+:")  # the loop's line for each cycle it ran
Metrics = dict[tuple[str, frozenset[tuple[str, str]]], float]  # (sample name, labels) -> value


def config(
    *,
    namespace: str,
    kubeconfig: Path,
    prometheus: str,
    api_port: int,
    files: Path,
    hooks: dict[str, str],
) -> dict[str, Any]:
    """Seconds-long windows, acting, in `namespace` only, with no default targets and no
    rule `notify`, so only the namespace's annotation routes; as a config file says it."""
    secret, key = files / "hook-secret", files / "link-key"
    secret.write_bytes(WEBHOOK_SECRET + b"\n")  # an editor's newline: trimmed
    key.write_bytes(LINK_KEY)
    targets = {
        name: {"type": "webhook", "url": url, "secretFile": str(secret), "timeout": TIMEOUTS[name]}
        for name, url in hooks.items()
    }
    links = {"baseUrl": f"http://127.0.0.1:{api_port}", "signingKeyFile": str(key), "ttl": "10m"}
    return {
        "prometheus": {"url": prometheus, "timeout": "1s"},
        "cluster": {"kubeconfig": str(kubeconfig), "serviceNamespace": f"{namespace}-svc"},
        "policy": {
            "thresholdPercent": 5,
            "idleWindow": "4s",
            "gracePeriod": "1s",
            "minCoverage": 0.5,
            "slot": "1s",
            "staleAfter": "5s",
            "idleSinceLookback": "5m",
            "dryRun": False,
            "namespaces": {"include": [namespace]},
            "warnBefore": f"{WARN_BEFORE_S}s",
            "snooze": {"maxDuration": f"{MAX_SNOOZE_S}s", "perDay": 3},
        },
        "loop": {"interval": "1s"},
        "watchCache": {"watchTimeout": "1s"},  # stopping waits for a quiet watch to end
        "api": {"host": "127.0.0.1", "port": api_port},
        "logging": {"format": "json"},
        "notifications": {
            "targets": targets,
            "links": {**links, "choices": [f"{LINK_SNOOZE_S}s"]},
            "retry": {"attempts": 3, "initialBackoff": "100ms", "maxBackoff": "200ms"},
        },
    }


def poll(probe: Callable[[], T | None], *, within: float, what: str) -> T:
    """`probe()` once it answers something truthy; fails after `within` seconds."""
    deadline = time.monotonic() + within
    while not (found := probe()):
        assert time.monotonic() < deadline, f"not within {within}s: {what}"
        time.sleep(0.1)
    return found


class Stops:
    """When each Workload of `namespace` got `spec.active: false`, by its owner's name."""

    def __init__(self, server: KubeServer, namespace: str) -> None:
        self.at: dict[str, datetime] = {}
        self._namespace = namespace
        self._lock = threading.Lock()
        self.unsubscribe = server.on_change(self._saw)

    def _saw(self, change: Change) -> None:
        meta, spec = change.object["metadata"], change.object.get("spec") or {}
        ours = change.kind == "Workload" and meta.get("namespace") == self._namespace
        if ours and spec.get("active", True) is False:
            with self._lock:
                self.at.setdefault(meta["ownerReferences"][0]["name"], datetime.now(UTC))


@dataclass
class NoticeRig:
    server: KubeServer
    namespace: str
    api: str  # the serve process's API, where the links point
    hooks: dict[str, WebhookReceiver]
    serve: ServeProcess
    stops: Stops
    live: LiveMetrics
    gpus: dict[str, list[Gpu]]

    def workload(self, raycluster: str) -> dict[str, Any]:
        return workload_of(self.server, self.namespace, raycluster)

    def annotations(self, raycluster: str) -> dict[str, str]:
        return dict(self.workload(raycluster)["metadata"].get("annotations") or {})

    def active(self, raycluster: str) -> bool:
        return bool(self.workload(raycluster)["spec"].get("active", True))

    def told(self, raycluster: str, kind: str, *, target: str = "team-hook") -> list[Received]:
        """What `target` received of `kind` about the RayCluster's Workload, in order."""
        name = self.workload(raycluster)["metadata"]["name"]
        return [
            r
            for r in self.hooks[target].received
            if r.json()["kind"] == kind and r.json()["workload"]["name"] == name
        ]

    def wait_told(self, raycluster: str, kind: str, *, count: int = 1, within: float) -> Received:
        """The `count`-th `kind` team-hook received about the RayCluster."""
        found = poll(
            lambda: self.told(raycluster, kind)[count - 1 :],
            within=within,
            what=f"{kind} #{count} about {raycluster}",
        )
        return found[0]

    def cycles(self) -> int:
        """Cycles the service logged so far."""
        return sum(1 for message in self.serve.messages() if CYCLE.match(message))

    def busy(self, raycluster: str) -> None:
        for gpu in self.gpus[raycluster]:
            self.live.exporter.set(gpu, utilization=85)

    def metrics(self) -> Metrics:
        """The process's /metrics."""
        text = httpx.get(f"{self.api}/metrics", timeout=5).text
        return {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    @classmethod
    @contextmanager
    def running(cls, server: KubeServer, live: LiveMetrics, *, files: Path) -> Iterator[NoticeRig]:
        """Receivers up, the namespace seeded, `serve` started; all of it gone after."""
        namespace = f"notify-{uuid.uuid4().hex[:6]}"
        with ExitStack() as stack:
            hooks = {
                name: stack.enter_context(WebhookReceiver(secret=WEBHOOK_SECRET))
                for name in TARGETS
            }
            hooks["slow-hook"].hang_next(10_000)
            hooks["broken-hook"].fail_next(10_000, status=500)
            api_port = free_port()
            kubeconfig = write_kubeconfig(files / "kubeconfig", server, token=f"serve-{namespace}")
            settings = config(
                namespace=namespace,
                kubeconfig=kubeconfig,
                prometheus=live.prometheus.url,
                api_port=api_port,
                files=files,
                hooks={n: h.url for n, h in hooks.items()},
            )
            stack.callback(_clean_up, server, live, namespace)
            gpus = seed(server, live, namespace)
            stops = Stops(server, namespace)
            stack.callback(stops.unsubscribe)
            serve = ServeProcess(write_config(files / "config.yaml", settings), log=files / "log")
            with serve:
                api = f"http://127.0.0.1:{api_port}"
                yield cls(server, namespace, api, hooks, serve, stops, live, gpus)


def seed(server: KubeServer, live: LiveMetrics, namespace: str) -> dict[str, list[Gpu]]:
    """The annotated namespace, a queue, and the RayClusters admitted a minute ago (past
    their grace period) whose GPUs sit idle; their GPUs."""
    server.store.put(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": namespace, "annotations": {keys.NOTIFY: ",".join(TARGETS)}},
        }
    )
    seed_queues(server, cluster_queue=f"cq-{namespace}", namespaces=[namespace], gpus=8)
    for name in RAYCLUSTERS:
        submit(server, make_raycluster(namespace, name).head(gpus=1).queue("user-queue").build())
    ClusterEmulator(server, clock=BackdatedClock().now, namespaces=[namespace]).sync()
    gpus = {name: gpus_of(server, namespace, name) for name in RAYCLUSTERS}
    for held in gpus.values():
        for gpu in held:
            live.exporter.set(gpu, utilization=0)
    return gpus


def _clean_up(server: KubeServer, live: LiveMetrics, namespace: str) -> None:
    for name in RAYCLUSTERS:
        for gpu in gpus_of(server, namespace, name):
            live.exporter.remove(gpu)
    for owned in (namespace, f"{namespace}-svc"):
        server.store.delete_namespace(owned)
    with suppress(ApiError):  # missing when seeding failed early
        server.store.delete("namespaces", name=namespace)
        server.store.delete("clusterqueues.kueue.x-k8s.io", name=f"cq-{namespace}")


def failures(metrics: Metrics, target: str) -> float:
    """Notifications to `target` that failed after their retries, of every kind."""
    return sum(
        value
        for (name, labels), value in metrics.items()
        if name == "idle_gpu_autoscaler_notifications_total"
        and ("target", target) in labels
        and ("outcome", "failed") in labels
    )


def retries(metrics: Metrics, target: str) -> float:
    key = ("idle_gpu_autoscaler_notification_retries_total", frozenset({("target", target)}))
    return metrics.get(key, 0.0)
