"""One real Prometheus on a loopback port, with backfilled history and live fake exporters.

    prom = PrometheusServer(tmp / "prom", binaries=require_binaries(), exporters=[exporter])
    prom.backfill(series, start=now - 3 * 3600, end=now - 60)  # before start: no restart needed
    with prom:                                                # ready, and every exporter scraped
        prom.query('DCGM_FI_DEV_GPU_UTIL{exported_pod="p"}')

Prometheus applies new scrape targets on 5 s tickers, so the first scrape of a session comes 5-10 s
after start; `start(wait_for_targets=False)` lets tests that need no live data run meanwhile.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import requests
import yaml

from .backfill import BackfillStats, backfill_series
from .dcgm import GpuSeries
from .scrape_config import ScrapeTarget, scrape_config
from .tools import PrometheusBinaries, free_port, wait_until

_START_ATTEMPTS = 3  # a free port can be taken between choosing and binding it


class PrometheusServer:
    def __init__(
        self,
        workdir: Path,
        *,
        binaries: PrometheusBinaries,
        retention: str = "30d",
        admin_api: bool = False,
        exporters: Sequence[ScrapeTarget] = (),
        extra_args: Sequence[str] = (),
    ) -> None:
        self.workdir = workdir
        self.data_dir = workdir / "data"
        self.config_path = workdir / "prometheus.yml"
        self.log_path = workdir / "prometheus.log"
        self._binaries = binaries
        self._flags = [f"--storage.tsdb.retention.time={retention}", *extra_args]
        if admin_api:
            self._flags.append("--web.enable-admin-api")
        self._exporters = tuple(exporters)
        self._process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._write_config()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, *, timeout_s: float = 30.0, wait_for_targets: bool = True) -> None:
        """Start and wait for /-/ready, then (by default) for every exporter's first scrape."""
        for attempt in range(_START_ATTEMPTS):
            self.port = self.port if attempt == 0 and self.port else free_port()
            if self._launch(timeout_s):
                break
        else:
            raise RuntimeError(f"prometheus did not start: {self._log_tail()}")
        if wait_for_targets and self._exporters:
            self.wait_for_targets()

    def wait_for_targets(self, *, timeout_s: float = 20.0) -> None:
        """Prometheus applies target changes on 5 s tickers: a first scrape takes 5-10 s."""
        wait_until(self._targets_match, timeout_s=timeout_s, what="scrape targets up")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def restart(self, *, wait_for_targets: bool = True) -> None:
        self.stop()
        self.start(wait_for_targets=wait_for_targets)

    def backfill(
        self,
        series: Sequence[GpuSeries],
        *,
        start: int,
        end: int,
        step_s: int = 15,
        scratch_dir: Path | None = None,
    ) -> BackfillStats:
        """Add history. A running server is restarted (~0.2 s) to load the new blocks at once; it
        does not wait for live targets then, so live data resumes within ~10 s."""
        was_running = self.running
        self.stop()
        stats = backfill_series(
            series,
            self.data_dir,
            promtool=self._binaries.promtool,
            start=start,
            end=end,
            step_s=step_s,
            scratch_dir=scratch_dir,
        )
        if was_running:
            self.start(wait_for_targets=False)
        return stats

    def scrape(self, *exporters: ScrapeTarget) -> None:
        """Scrape exactly these exporters every second from now on (SIGHUP reload).

        Slow (5-10 s, Prometheus' discovery tickers): prefer passing every exporter a session
        needs to the constructor, and move a GPU between two running exporters to replay an
        exporter pod being replaced."""
        self._exporters = exporters
        self._write_config()
        if self.running:
            assert self._process is not None
            self._process.send_signal(signal.SIGHUP)
            self.wait_for_targets()

    def query(self, promql: str, *, at: float | None = None) -> list[dict[str, Any]]:
        """Instant query through plain HTTP; returns `data.result`."""
        params = {"query": promql} | ({"time": str(at)} if at is not None else {})
        response = requests.get(f"{self.url}/api/v1/query", params=params, timeout=10)
        body = response.json()
        if body.get("status") != "success":
            raise RuntimeError(f"query {promql!r} failed: {body}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def __enter__(self) -> PrometheusServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _launch(self, timeout_s: float) -> bool:
        command = [
            str(self._binaries.prometheus),
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={self.data_dir}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            *self._flags,
        ]
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_until(self._ready_or_dead, timeout_s=timeout_s, what="prometheus /-/ready")
        except TimeoutError as exc:
            self.stop()
            raise RuntimeError(f"prometheus not ready: {self._log_tail()}") from exc
        if self.running:
            return True
        self._process = None
        return False

    def _ready_or_dead(self) -> bool:
        if not self.running:
            return True
        try:
            return requests.get(f"{self.url}/-/ready", timeout=1).status_code == 200
        except requests.ConnectionError:
            return False

    def _targets_match(self) -> bool:
        response = requests.get(f"{self.url}/api/v1/targets", params={"state": "active"}, timeout=5)
        active = response.json()["data"]["activeTargets"]
        up = {(t["scrapeUrl"], t["labels"].get("pod")) for t in active if t["health"] == "up"}
        wanted = {
            (f"http://{e.address}/metrics", e.scrape_labels()["pod"]) for e in self._exporters
        }
        return len(active) == len(wanted) and up == wanted

    def _write_config(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = scrape_config(self._exporters)
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")

    def _log_tail(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-3000:]


@contextmanager
def running_prometheus(
    workdir: Path, *, binaries: PrometheusBinaries, **options: Any
) -> Iterator[PrometheusServer]:
    """A started server, stopped on exit (for a session fixture)."""
    server = PrometheusServer(workdir, binaries=binaries, **options)
    with server:
        yield server
