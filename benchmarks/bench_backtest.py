"""The backtest over a week of a thousand GPUs scraped every 60 s, on a real Prometheus.

Run by hand from the repository root (needs prometheus and promtool):

    python -m benchmarks.bench_backtest                          # 1,000 GPUs x 7 days
    python -m benchmarks.bench_backtest --gpus 100 --days 1      # a quick look
    python -m benchmarks.bench_backtest --workdir /var/tmp/bt --keep     # then --reuse

The history is written to a file (promtool seeks, it cannot read a pipe) and backfilled with
`promtool tsdb create-blocks-from openmetrics --max-block-duration=168h`, so promtool reads the
file once per week-long block window instead of once per 2-hour block. The backtest then runs
in a child process, so its peak memory is its own: the default command (the policy, three
alternatives and the chart's windows, 7 variants in all) over the whole week.
"""

from __future__ import annotations

import argparse
import multiprocessing
import platform
import resource
import shutil
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from autoscaler.adapters.prometheus.range import PrometheusRange
from autoscaler.backtest.arguments import CHART_WINDOWS
from autoscaler.backtest.command import BacktestOptions, backtest, default_alternatives
from autoscaler.domain.durations import parse_duration
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import PrometheusSettings, Settings
from tests.support.prom import (
    GPU_UTIL,
    ExporterPod,
    Gpu,
    GpuSeries,
    Profile,
    PrometheusServer,
    require_binaries,
    write_openmetrics,
)
from tests.support.prom.backfill import create_blocks
from tests.support.prom.profiles import Burst

DAY, HOUR = 86400, 3600
GPUS_PER_CLUSTER = 4  # a 1-GPU head and a 3-GPU worker
NAMESPACES = 10


def main() -> None:
    args = _arguments()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-backtest-"))
    try:
        run(args, workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def run(args: argparse.Namespace, workdir: Path) -> None:
    prom = PrometheusServer(workdir / "prom", binaries=require_binaries())
    end, samples = _history(prom, workdir, args)
    with prom:
        context = multiprocessing.get_context("spawn")
        with context.Pool(1) as pool:
            for attempt in range(args.repeat):
                found = pool.apply(replay, (prom.url, end, args.days))
                _report(found, args=args, samples=samples, attempt=attempt)


def replay(url: str, end: int, days: int) -> dict[str, Any]:
    """One default backtest over the whole history, measured from inside its process."""
    settings = Settings(prometheus=PrometheusSettings(url=url, timeout=timedelta(seconds=60)))
    policy = build_policy(settings)
    options = BacktestOptions(
        start=datetime.fromtimestamp(end - days * DAY, UTC),
        end=datetime.fromtimestamp(end, UTC),
        step=settings.loop.interval,
        alternatives=default_alternatives(policy),
        chart_windows=tuple(parse_duration(w) for w in CHART_WINDOWS),
        horizon=timedelta(hours=2),
    )
    source = PrometheusRange(prometheus=settings.prometheus, timeout=timedelta(seconds=60))
    began, cpu = time.perf_counter(), time.process_time()
    try:
        report = backtest(source, options=options, settings=settings, policy=policy)
    finally:
        source.close()
    total = report.variants[0].total
    return {
        "wall_s": time.perf_counter() - began,
        "cpu_s": time.process_time() - cpu,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "queries": source.queries_issued,
        "gpus": report.gpus,
        "clusters": report.workloads,
        "variants": len({*report.variants, *report.chart}),
        "deactivations": total.deactivations,
        "gpu_hours": total.gpu_hours,
        "regrets": total.regrets,
    }


def fleet(gpus: int, *, start: int, days: int) -> list[GpuSeries]:
    """RayClusters of 4 GPUs in 10 namespaces; what each does depends on its number."""
    series = []
    for cluster in range(gpus // GPUS_PER_CLUSTER):
        profile = _profile(cluster, start=start, days=days)
        namespace = f"team-{cluster % NAMESPACES}"
        node = f"gpu-node-{cluster // 2:04d}"
        exporter = ExporterPod(pod=f"nvidia-dcgm-exporter-{cluster // 2:05x}",
                               ip=f"10.130.{cluster // 512}.{cluster // 2 % 256}")  # fmt: skip
        pods = [(f"rc-{cluster:04d}-head-{_suffix(cluster)}", 1)]
        pods.append((f"rc-{cluster:04d}-gpu-group-worker-{_suffix(cluster + 7)}", 3))
        index = (cluster % 2) * GPUS_PER_CLUSTER
        for pod, count in pods:
            for _ in range(count):
                gpu = Gpu(namespace=namespace, pod=pod, node=node, index=index)
                series.append(gpu.history(profile, exporter=exporter, metrics=(GPU_UTIL,)))
                index += 1
    return series


def _profile(cluster: int, *, start: int, days: int) -> Profile:
    kind = cluster % 10
    if kind <= 3:
        return Profile.busy(85)
    if kind <= 5:  # office hours, 09:00-18:00 UTC: idle every night
        profile = Profile.idle(0)
        first_day = start // DAY * DAY
        for day in range(days + 1):
            profile = profile.level(85, start=first_day + day * DAY + 9 * HOUR,
                                    end=first_day + day * DAY + 18 * HOUR)  # fmt: skip
        return profile
    if kind == 6:
        return Profile(base=Burst(period_s=1200, busy_s=120, busy_pct=95))
    if kind == 7:  # a job that ends for good some day at noon
        return Profile.busy(80).idle_from(start + (cluster % days) * DAY + 12 * HOUR)
    if kind == 8:  # busy, but the exporter misses two hours every night
        profile = Profile.busy(70)
        for day in range(days):
            profile = profile.gap(start + day * DAY + 3 * HOUR, start + day * DAY + 5 * HOUR)
        return profile
    return Profile.idle(1)  # a forgotten workspace


def _history(prom: PrometheusServer, workdir: Path, args: argparse.Namespace) -> tuple[int, int]:
    marker = workdir / "history.txt"
    if args.reuse and marker.exists():
        end, samples = map(int, marker.read_text().split())
        print(f"reusing the history in {workdir}", flush=True)
        return end, samples
    end = int(time.time()) // 60 * 60 - 120
    start = end - args.days * DAY - 9 * HOUR  # the warm-up: the longest window and a slot
    series = fleet(args.gpus, start=start, days=args.days + 1)
    path = workdir / "history.om"
    print(f"writing {len(series)} GPUs x {args.days} days every 60 s to {path} ...", flush=True)
    began = time.perf_counter()
    samples = write_openmetrics(series, path, start=start + 7, end=end, step_s=60)
    written = time.perf_counter()
    print(f"  {samples:,} samples, {path.stat().st_size / 1e9:.2f} GB in {written - began:.0f} s")
    create_blocks(path, prom.data_dir, promtool=require_binaries().promtool,
                  max_block_duration="168h")  # fmt: skip
    print(f"  promtool --max-block-duration=168h: {time.perf_counter() - written:.0f} s")
    path.unlink()
    marker.write_text(f"{end} {samples}")
    return end, samples


def _report(found: dict[str, Any], *, args: argparse.Namespace, samples: int, attempt: int) -> None:
    if attempt == 0:
        print()
        machine = platform.processor() or platform.machine()
        cpus, python = multiprocessing.cpu_count(), platform.python_version()
        print(f"Machine: {machine}, {cpus} CPUs, Python {python}")
        print(f"History: {found['gpus']} GPUs in {found['clusters']} RayClusters, {args.days} days "
              f"every 60 s ({samples:,} samples)")  # fmt: skip
        print()
        print("| run | wall | CPU | peak RSS | range queries | variants | policy: deactivations "
              "/ GPU-hours / regrets |")  # fmt: skip
        print("|---|---:|---:|---:|---:|---:|---|")
    print(
        f"| {attempt + 1} | {found['wall_s']:.1f} s | {found['cpu_s']:.1f} s "
        f"| {found['max_rss_mb']:.0f} MB | {found['queries']} | {found['variants']} "
        f"| {found['deactivations']} / {found['gpu_hours']:.0f} / {found['regrets']} |",
        flush=True,
    )


def _suffix(number: int) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    letters = []
    for _ in range(5):
        number, index = divmod(number * 7919 + 13, len(alphabet))
        letters.append(alphabet[index])
    return "".join(letters)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=2, help="backtest runs on one history")
    parser.add_argument("--workdir", help="where the TSDB goes (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the workdir for --reuse")
    parser.add_argument("--reuse", action="store_true", help="reuse a kept history")
    return parser.parse_args()


if __name__ == "__main__":
    main()
