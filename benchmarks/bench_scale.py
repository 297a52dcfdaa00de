"""The service's cycle at 1,000 and 10,000 workloads: time, requests, bytes and memory, raw
queries beside recorded series, side by side on one Prometheus per fleet size.

Run by hand from the repository root (needs prometheus and promtool; the 10,000-workload
history is about 10 GB of OpenMetrics while it is written, 20 minutes on two cores):

    python -m benchmarks.bench_scale --workdir /tmp/scale           # 1k and 10k
    python -m benchmarks.bench_scale --workdir /tmp/scale --reuse   # measure again
    python -m benchmarks.bench_scale --sizes 100 1000 --hours 2            # a quick look

Per fleet size (`mixed_fleet` of bench_cycle_queries: 4 GPUs per workload, 60 % idle, 30 %
busy, 10 % bursty, both signals), in `--workdir/f<size>`:
  1. `--hours` of history every 30 s, backfilled with promtool, ending a minute before one of
     promtool's 2 h block boundaries (a rule evaluation in a boundary's last second is skipped:
     tests/support/recorded_rig.py);
  2. the recording rules the service generates for its default settings, evaluated over the
     last `RECORDED` of that history by `promtool tsdb create-blocks-from rules` against the
     running server, as a Prometheus or Thanos Ruler would have recorded them;
  3. `--repeat` times, in turn, one child process per mode (`recordedSeries.mode: off`, raw;
     `auto`, recorded): the service as `serve` builds it (`build_service`, the metric source
     of `compose.serve`, the default settings, dry run) over an in-memory cluster of `size`
     Workloads whose pods are the history's, running `--cycles` reconcile cycles a minute
     apart (the first is a process's first read: BUSY over the whole lookback). Each cycle's
     wall time, the queries it sent, the bytes Prometheus answered (its own
     `prometheus_http_response_size_bytes` counter) and the process's peak RSS at the end.
A child process per mode and repeat: RSS is that process's own, and no cache outlives it.
With `--before DIR` (a tree holding an older `autoscaler/`), each repeat also runs both modes
with that tree's service, in turn with this one's, on the same server: before and after side
by side (rows marked "before").
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests

import autoscaler
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.compose.loop_parts import SharedState
from autoscaler.compose.serve import build_metric_source
from autoscaler.compose.service import Service, build_service
from autoscaler.domain.models import Snapshot, WorkloadInfo
from autoscaler.settings.tree import Settings
from benchmarks.bench_cycle_queries import load_average, mixed_fleet
from tests.support.domain_builders import a_workload
from tests.support.fakes import FakeClock, FakeCluster, FakeRuntimeState
from tests.support.prom import PrometheusServer, require_binaries
from tests.support.recorded_rig import record_rules

M, H = 60, 3600
BLOCK = 2 * H  # promtool's block length for rule backfills
RECORDED = 100 * M  # recordings before the end: a one-hour view's reach and more
MODES = ("raw", "recorded")
_RESPONSE_BYTES = "prometheus_http_response_size_bytes_sum"


@dataclass(frozen=True)
class Cycle:
    seconds: float
    queries: int
    bytes: int


def main(argv: Sequence[str] | None = None) -> None:
    args = _arguments(argv)
    if args.child:
        child(args)
        return
    results: dict[int, dict[str, list[dict[str, object]]]] = {}
    for size in args.sizes:
        results[size] = measure_size(size, args=args)
    report(results, args=args)


def measure_size(size: int, *, args: argparse.Namespace) -> dict[str, list[dict[str, object]]]:

    workdir = Path(args.workdir) / f"f{size}"
    server = PrometheusServer(workdir / "prom", binaries=require_binaries())
    end = history(server, size=size, workdir=workdir, args=args)
    trees = [None, Path(args.before)] if args.before else [None]
    runs: dict[str, list[dict[str, object]]] = {}
    with server:
        for _ in range(args.repeat):
            for tree in trees:
                for mode in MODES:
                    result = run_child(
                        server.url, size=size, mode=mode, end=end, args=args, tree=tree
                    )
                    runs.setdefault(f"{mode}{' before' if tree else ''}", []).append(result)
    return runs


def history(server: PrometheusServer, *, size: int, workdir: Path, args: argparse.Namespace) -> int:
    """Backfill raw history and recordings once; `--reuse` finds them by their marker."""

    marker = workdir / "history.txt"
    if args.reuse and marker.exists():
        print(f"reusing the history in {workdir}", flush=True)
        return int(marker.read_text())
    end = (int(time.time()) - 10 * M) // BLOCK * BLOCK - M
    series = mixed_fleet(size, 4)
    print(f"{size} workloads: backfilling {len(series)} GPUs x {args.hours} h ...", flush=True)
    stats = server.backfill(series, start=end - args.hours * H, end=end, step_s=30)
    print(f"  {stats.samples:,} samples, promtool {stats.promtool_s:.0f} s", flush=True)
    began = time.perf_counter()
    record(server, workdir=workdir, end=end)
    print(f"  recordings: {time.perf_counter() - began:.0f} s", flush=True)
    marker.write_text(str(end))
    return end


def record(server: PrometheusServer, *, workdir: Path, end: int) -> None:
    with server:  # the server answers promtool's queries; the next start loads the blocks
        record_rules(server, workdir=workdir, start=end - RECORDED, end=end)


def run_child(
    url: str, *, size: int, mode: str, end: int, args: argparse.Namespace, tree: Path | None
) -> dict[str, object]:
    """One child; with `tree`, its `autoscaler/` is that tree's (`-P`: the working directory,
    which holds this tree's, is not put first on the path; benchmarks/ and tests/ stay ours)."""
    command = [sys.executable, "-P", "-m", "benchmarks.bench_scale", "--child", "--url", url]
    command += ["--sizes", str(size), "--mode", mode, "--end", str(end)]
    command += ["--cycles", str(args.cycles)]
    path = [str(tree)] if tree else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, os.getcwd()])}
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    print(f"  {size} {mode}{' (before)' if tree else ''}: {result}", flush=True)
    return result


def child(args: argparse.Namespace) -> None:
    """One process: the service over `size` workloads, `--cycles` cycles a minute apart."""

    size, end = args.sizes[0], args.end
    settings = Settings.model_validate(
        {
            "prometheus": {
                "url": args.url,
                "timeout": "300s",
                "recordedSeries": {"mode": _mode(args)},
            }
        }
    )
    before_rss = _rss_kib()
    cluster = FakeCluster(workloads=fleet_workloads(size))
    metrics = build_metric_source(settings)
    clock = FakeClock(_time(end - (args.cycles - 1) * M))
    logger = logging.getLogger("bench-scale")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    # The runtime state (the guards' memory, the audit trail) in memory, as the demo keeps it.
    parts: dict[str, object] = {"shared": SharedState(store=FakeRuntimeState(), actuator=cluster)}
    if "actuator" in inspect.signature(build_service).parameters:  # an older tree (`--before`)
        parts["actuator"] = cluster
    service = build_service(settings, cluster=cluster, metrics=metrics, clock=clock,
                            logger=logger, **parts)  # fmt: skip
    cycles = []
    with requests.Session() as session:
        for _ in range(args.cycles):
            cycles.append(one_cycle(service, metrics=metrics, session=session, url=args.url))
            clock.advance(timedelta(minutes=1))
    peak_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    snapshot = service.store.latest()
    print(json.dumps({
        "tree": str(Path(autoscaler.__file__).parent.parent),
        "cycles": [vars(cycle) for cycle in cycles],
        "source": metrics.slots.source,
        "workloads": len(snapshot.workloads) if snapshot else 0,
        "rss_start_mib": before_rss / 1024,
        "peak_rss_mib": peak_rss_mib,
        "digest": digest(snapshot),
    }))  # fmt: skip


def digest(snapshot: Snapshot | None) -> str:
    """The last cycle's decisions and usage, hashed: before and after must read alike
    (floats by repr: every bit but a NaN's)."""
    if snapshot is None:
        return ""
    decisions = [row.decision for row in snapshot.workloads]
    usage = sorted(snapshot.usage.items())
    return hashlib.sha256(repr((decisions, usage)).encode()).hexdigest()[:16]


def _mode(args: argparse.Namespace) -> str:
    return "off" if args.mode == "raw" else "auto"


def one_cycle(
    service: Service, *, metrics: PrometheusMetricSource, session: requests.Session, url: str
) -> Cycle:

    sent, answered = metrics.queries_issued, response_bytes(session, url)
    began = time.perf_counter()
    service.reconciler.run_once()
    seconds = time.perf_counter() - began
    return Cycle(seconds, metrics.queries_issued - sent, response_bytes(session, url) - answered)


def fleet_workloads(size: int) -> list[WorkloadInfo]:
    """Kueue Workloads of RayClusters whose one 4-GPU pod each is `mixed_fleet`'s."""

    return [
        a_workload(f"team-{i % 20}", f"wl-{i:04d}").gpu_pod(f"wl-{i:04d}-worker-0", gpus=4).build()
        for i in range(size)
    ]


def response_bytes(session: requests.Session, url: str) -> int:
    """What Prometheus has answered to queries so far, by its own count."""
    text = session.get(f"{url}/metrics", timeout=30).text
    return round(sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(_RESPONSE_BYTES) and 'handler="/api/v1/query' in line
    ))  # fmt: skip


def report(
    results: dict[int, dict[str, list[dict[str, object]]]], *, args: argparse.Namespace
) -> None:
    print(f"\nload average {load_average()}")
    print(
        "| workloads | read | first cycle s | next cycles s (median) | queries per cycle "
        "| bytes per cycle | peak RSS MiB | digest |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---|")
    for size, runs in results.items():
        for mode, children in runs.items():
            first = [c["cycles"][0]["seconds"] for c in children]  # type: ignore[index]
            later = [x["seconds"] for c in children for x in c["cycles"][1:]]  # type: ignore[index]
            last = children[-1]["cycles"][-1]  # type: ignore[index]
            rss = max(float(c["peak_rss_mib"]) for c in children)  # type: ignore[arg-type]
            next_ones = f"{statistics.median(later):.2f}" if later else ""  # --cycles 1
            print(
                f"| {size:,} | {mode} ({children[0]['source']}) | {statistics.median(first):.2f} "
                f"| {next_ones} | {last['queries']} | {last['bytes']:,} "
                f"| {rss:.0f} | {' '.join(sorted({str(c['digest']) for c in children}))} |"
            )


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _time(unix: int) -> datetime:
    return datetime.fromtimestamp(unix, UTC)


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default="/tmp/bench-scale")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--hours", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--cycles", type=int, default=4)
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--before", help="a tree holding an older autoscaler/, run beside")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--end", type=int, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


if __name__ == "__main__":
    main()
