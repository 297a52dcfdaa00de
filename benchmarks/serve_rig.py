"""`idle-gpu-autoscaler serve` as a real child process over a realistic fleet, for load benchmarks.

    with ServeRig.running(workloads=1000, workdir=tmp) as rig:
        rig.api            # REST base URL; rig.token reads every namespace
        rig.keda_port      # the external scaler (gRPC, plaintext)
        rig.targets        # (namespace, Workload name) of every workload in the snapshot

The world runs in a child process of its own (spawn), so the benchmark's callers share a GIL
with nothing: the test Kubernetes API server (tests/support/kube_server) holding one RayCluster
per workload (a 1-GPU head pod, running for 4 h) with its admitted Kueue Workload, and a live
fake dcgm-exporter reporting every GPU. A real Prometheus scrapes it every second and holds
`HISTORY` of backfilled history of the same series: half the fleet busy at 80 %, half idle at
1 %. `serve` runs with the product's defaults (1 h window at 5 %, a cycle a minute), dry-run
(the fleet does not change under the benchmark) and the idle-since lookback cut to 2 h, so the
history to backfill stays small.
"""

from __future__ import annotations

import multiprocessing
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx

from benchmarks.bench_cycle_queries import load_average
from tests.support.builders import make_pod, make_raycluster, make_workload_for
from tests.support.kube_server import KubeServer
from tests.support.prom import (
    ExporterPod,
    FakeDcgmExporter,
    Gpu,
    Profile,
    PrometheusServer,
    free_port,
    require_binaries,
)
from tests.support.seeding import seed_queues
from tests.support.serve_process import ServeProcess, write_config, write_kubeconfig

NAMESPACES = 10
HISTORY = timedelta(hours=2, minutes=10)  # the 2 h lookback and a few slots
HISTORY_STEP_S = 30
LOOKBACK = "2h"
TOKEN = "bench-reader"  # a bearer token that may list Workloads everywhere
SERVE_TOKEN = "bench-serve"
READY_TIMEOUT_S = 300.0
CYCLE_METRIC = "idle_gpu_autoscaler_cycle_duration_seconds"


def gpu_of(i: int) -> Gpu:
    """Workload i's one GPU, in pod `wl-<i>-head-0` of `team-<i % NAMESPACES>`."""
    return Gpu(namespace=f"team-{i % NAMESPACES}", pod=f"wl-{i:04d}-head-0", node=f"node-{i:04d}")


def utilization_of(i: int) -> float:
    return 80.0 if i % 2 == 0 else 1.0


@dataclass(frozen=True)
class ExporterTarget:
    """The child's exporter as Prometheus' scrape configuration needs it (a ScrapeTarget)."""

    address: str
    labels: dict[str, str]
    honor_labels: bool

    def scrape_labels(self) -> dict[str, str]:
        return self.labels


def seed_fleet(server: KubeServer, *, workloads: int, since: datetime) -> list[tuple[str, str]]:
    """One RayCluster, its admitted Workload and its running GPU pod per workload."""
    namespaces = [f"team-{n}" for n in range(NAMESPACES)]
    for namespace in namespaces:
        server.store.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    seed_queues(server, cluster_queue="cq-bench", namespaces=namespaces, gpus=2 * workloads)
    targets = []
    for i in range(workloads):
        gpu = gpu_of(i)
        assert gpu.namespace is not None and gpu.pod is not None
        cluster = make_raycluster(gpu.namespace, f"wl-{i:04d}").head(gpus=1).queue("user-queue")
        raycluster = cluster.build()
        workload = make_workload_for(raycluster).admitted(at=since).build()
        pod = make_pod(gpu.namespace, gpu.pod).owned_by_raycluster(raycluster).gpus(1)
        for obj in (raycluster, workload, pod.running(since=since).build()):
            server.store.put(obj)
        targets.append((gpu.namespace, str(workload["metadata"]["name"])))
    server.reviews.add_token(TOKEN, username=TOKEN)
    server.reviews.allow(user=TOKEN, verb="list", reason="the benchmark reads everything")
    return targets


def run_world(conn: Connection, workloads: int) -> None:
    """Child process: the API server and the exporter, until the parent says stop."""
    since = datetime.now(UTC) - timedelta(hours=4)
    server = KubeServer(clock=lambda: since).start()
    exporter = FakeDcgmExporter()
    exporter.start()
    try:
        targets = seed_fleet(server, workloads=workloads, since=since)
        for i in range(workloads):
            exporter.set(gpu_of(i), utilization=utilization_of(i))
        target = ExporterTarget(exporter.address, exporter.scrape_labels(), exporter.honor_labels)
        conn.send((server.url, target, targets))
        conn.recv()  # "stop"
    finally:
        exporter.stop()
        server.close()


def serve_settings(
    *, kubeconfig: Path, prometheus: str, api_port: int, keda_port: int
) -> dict[str, Any]:
    return {
        "prometheus": {"url": prometheus},
        "cluster": {"kubeconfig": str(kubeconfig), "serviceNamespace": "gpu-ops"},
        "policy": {"dryRun": True, "idleSinceLookback": LOOKBACK},
        "api": {"host": "127.0.0.1", "port": api_port},
        "keda": {"enabled": True, "port": keda_port},
        "logging": {"format": "json"},
    }


@dataclass
class ServeRig:
    api: str
    keda_port: int
    targets: list[tuple[str, str]]
    serve: ServeProcess
    token: str = TOKEN

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def cycle_seconds(self) -> tuple[int, float]:
        """Cycles run and their total wall time, from `serve`'s own /metrics."""
        text = httpx.get(f"{self.api}/metrics", timeout=30).text
        found = dict(
            line.rsplit(" ", 1) for line in text.splitlines() if line.startswith(CYCLE_METRIC)
        )
        return int(float(found[f"{CYCLE_METRIC}_count"])), float(found[f"{CYCLE_METRIC}_sum"])

    def failures(self) -> list[str]:
        """serve's log lines at ERROR level or with a traceback."""
        text = self.serve.log.read_text(encoding="utf-8", errors="replace")
        return [line for line in text.splitlines() if '"ERROR"' in line or "Traceback" in line]

    def snapshot_summary(self) -> dict[str, int]:
        """How many rows the latest snapshot holds in each state."""
        body = httpx.get(f"{self.api}/api/v1/workloads", headers=self.headers, timeout=30).json()
        states: dict[str, int] = {}
        for item in body["items"]:
            states[item["state"]] = states.get(item["state"], 0) + 1
        return states

    @classmethod
    @contextmanager
    def running(
        cls, *, workloads: int, workdir: Path | None = None, before: Path | None = None
    ) -> Iterator[ServeRig]:
        """`before`: a directory holding an older `autoscaler/` package for `serve` to run
        (e.g. `git archive <commit> autoscaler | tar -x -C DIR`), to compare in one run."""
        with ExitStack() as stack:
            files = workdir or Path(tempfile.mkdtemp(prefix="bench-serve-"))
            if workdir is None:
                stack.callback(shutil.rmtree, files, True)
            kube_url, exporter, targets = _start_world(stack, workloads)
            prom = _prometheus(files, exporter, workloads)
            stack.enter_context(prom)
            kubeconfig = write_kubeconfig(files / "kubeconfig", _Url(kube_url), token=SERVE_TOKEN)
            api_port, keda_port = free_port(), free_port()
            settings = serve_settings(
                kubeconfig=kubeconfig, prometheus=prom.url, api_port=api_port, keda_port=keda_port
            )
            config = write_config(files / "config.yaml", settings)
            serve = (OlderServe if before else ServeProcess)(config, log=files / "log")
            if before:
                serve.env["BENCH_TREE"] = str(before)
            stack.enter_context(serve)
            rig = cls(f"http://127.0.0.1:{api_port}", keda_port, targets, serve)
            rig.wait_ready(workloads)
            try:
                yield rig
            except Exception:
                print(f"serve's log ends:\n{_tail(serve.log)}", file=sys.stderr)
                raise

    def wait_ready(self, workloads: int) -> None:
        """Until a cycle has published every workload with its usage known."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if not self.serve.running:
                raise RuntimeError(f"serve exited; its log: {self.serve.log}")
            try:
                states = self.snapshot_summary()
            except (httpx.HTTPError, ValueError, KeyError):
                states = {}
            if sum(states.values()) == workloads and "unknown" not in states:
                return
            time.sleep(1)
        raise RuntimeError(f"serve not ready in {READY_TIMEOUT_S:.0f}s; its log: {self.serve.log}")


class OlderServe(ServeProcess):
    """`serve` from the tree in env BENCH_TREE: `python -m` puts its working directory first
    on the path, before PYTHONPATH and the editable install, so it runs there."""

    def start(self) -> None:
        with self.log.open("ab") as sink:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "autoscaler", "serve", "--config", str(self.config)],
                stdout=subprocess.DEVNULL,
                stderr=sink,
                env=self.env,
                cwd=self.env["BENCH_TREE"],
            )


def _tail(log: Path, *, lines: int = 40) -> str:
    return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


@dataclass(frozen=True)
class _Url:
    """What write_kubeconfig reads of a KubeServer: its URL."""

    url: str


def _start_world(stack: ExitStack, workloads: int) -> tuple[str, ExporterTarget, Any]:
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=run_world, args=(child, workloads), daemon=True)
    process.start()
    stack.callback(process.join, 30)
    stack.callback(parent.send, "stop")
    if not parent.poll(120):
        raise RuntimeError("the world did not start (see the child's traceback above)")
    kube_url, exporter, targets = parent.recv()
    return kube_url, exporter, targets


def _prometheus(files: Path, exporter: ExporterTarget, workloads: int) -> PrometheusServer:
    """A Prometheus scraping the live exporter, with the same series backfilled before it."""
    prom = PrometheusServer(files / "prom", binaries=require_binaries(), exporters=[exporter])
    end = int(time.time()) - 60
    pod = ExporterPod()  # the live exporter's own, so backfill and scrapes are one series
    series = [
        gpu_of(i).history(Profile.busy(utilization_of(i)), exporter=pod) for i in range(workloads)
    ]
    prom.backfill(series, start=end - int(HISTORY.total_seconds()), end=end, step_s=HISTORY_STEP_S)
    return prom


@dataclass
class RunNotes:
    """What shared the machine with a measurement: the load average and `serve`'s cycles."""

    load_before: str = ""
    load_after: str = ""
    cycles: int = 0
    cycle_seconds: float = 0.0

    def text(self) -> str:
        return (
            f"load average {self.load_before} before, {self.load_after} after; "
            f"{self.cycles} cycles of serve during the run ({self.cycle_seconds:.1f} s in all)"
        )


@contextmanager
def observed(rig: ServeRig) -> Iterator[RunNotes]:
    notes = RunNotes(load_before=load_average())
    cycles, seconds = rig.cycle_seconds()
    yield notes
    notes.load_after = load_average()
    now_cycles, now_seconds = rig.cycle_seconds()
    notes.cycles, notes.cycle_seconds = now_cycles - cycles, now_seconds - seconds
