"""One usage read over a large fleet: fleet-wide queries next to one query set per workload.

Run by hand from the repository root (needs prometheus and promtool; takes a few minutes):

    python -m benchmarks.bench_cycle_queries                  # 1,000 workloads on 4,000 GPUs
    python -m benchmarks.bench_cycle_queries --workloads 100  # a quick look

It backfills `--hours` of dcgm-exporter history scraped every `--step` seconds into a real
Prometheus, then measures, side by side in one run:
  1. `PrometheusMetricSource.read_views` for one view (the queries it issued and its wall
     time),
  2. the same PromQL sent with plain `requests` (the bare server time plus transfer),
  3. the same measures asked one workload at a time: every query narrowed to the workload's
     pod, so `workloads x queries` requests per read, as a per-workload design would do;
  4. one read for four usage views (rules with other windows and thresholds) next to one for
     a single view, and next to four reads of one view each (what looping over views costs).

With `--fleet-read` it measures instead the read beside the cheapest formulation of the same
facts, each query's HTTP exchange apart from its parsing, and optionally an older adapter
(`--before DIR`) in the same run (`fleet_read.py`).
"""

from __future__ import annotations

import argparse
import platform
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests

from autoscaler.adapters.prometheus.promql import QueryTemplates, QueryWindow, Stat, build_queries
from autoscaler.adapters.prometheus.source import PrometheusMetricSource
from autoscaler.domain.models import UsageView
from autoscaler.settings.tree import PolicySettings, PrometheusSettings
from benchmarks import fleet_read  # a namespace package, run from the repository root
from tests.support.prom import (
    ALL_METRICS,
    GpuSeries,
    Profile,
    PrometheusServer,
    fleet,
    require_binaries,
)
from tests.support.recorded_rig import record_rules

WINDOW = timedelta(hours=1)
THRESHOLD = 0.05
FOUR_VIEWS = (
    UsageView(WINDOW, THRESHOLD),
    UsageView(timedelta(minutes=15), 0.10),
    UsageView(timedelta(hours=2), THRESHOLD),
    UsageView(timedelta(minutes=30), 0.01),
)
RECORDED_MARKER = "recorded.txt"
RULE_BLOCK_S = 2 * 3600  # promtool's block length for rules
RECORDED_S = 77 * 60  # a one-hour view's reach (window, coarse step, one slot) and a minute
_METRIC = re.compile(r'(?<!")(DCGM_FI_\w+)(\{([^}]*)\})?')


@dataclass(frozen=True)
class Timing:
    label: str
    requests: int
    seconds: list[float]
    result_bytes: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def main(argv: Sequence[str] | None = None) -> None:
    args = _arguments(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-cycle-"))
    try:
        run(args, workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def run(args: argparse.Namespace, workdir: Path) -> None:
    prom = PrometheusServer(workdir / "prom", binaries=require_binaries())
    end, samples = _history(prom, workdir, args)
    policy = PolicySettings(idle_since_lookback=timedelta(hours=args.lookback_hours))
    with prom:
        at = datetime.fromtimestamp(end, UTC)
        _warm_up(prom.url, at)
        if args.fleet_read:
            load = {"before": load_average()}
            before = Path(args.before) if args.before else None
            cases = fleet_read.measure(
                prom.url,
                policy=policy,
                at=at,
                repeat=args.repeat,
                before=before,
                evidence=not args.lean,
                recorded=(workdir / RECORDED_MARKER).exists(),
            )
            load["after"] = load_average()
        else:
            timings, per_query = measure(prom.url, policy=policy, at=at, args=args)
    if args.fleet_read:
        print(f"Machine: {_machine()}; fleet: {args.workloads} workloads, {samples:,} samples")
        fleet_read.report(cases, load=load)
        return
    report(timings, per_query, args=args, samples=samples)


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: the cores are shared."""
    return " ".join(Path("/proc/loadavg").read_text(encoding="utf-8").split()[:3])


def _history(prom: PrometheusServer, workdir: Path, args: argparse.Namespace) -> tuple[int, int]:
    """Backfill the fleet, or reuse the one a previous `--keep` run left in `--workdir`."""
    marker = workdir / "history.txt"
    if args.reuse and marker.exists():
        end, samples = map(int, marker.read_text().split())
        print(f"reusing the history in {workdir}", flush=True)
        if args.fleet_read and not (workdir / RECORDED_MARKER).exists():
            record(prom, workdir, end=end)
        return end, samples
    end = int(time.time()) // 60 * 60 - 120
    series = mixed_fleet(args.workloads, args.gpus_per_workload)
    print(f"backfilling {len(series)} GPUs x {args.hours} h every {args.step} s ...", flush=True)
    stats = prom.backfill(series, start=end - args.hours * 3600, end=end, step_s=args.step)
    print(
        f"  {stats.samples:,} samples, {stats.file_bytes / 1e9:.2f} GB OpenMetrics, "
        f"written in {stats.write_s:.0f} s, promtool {stats.promtool_s:.0f} s",
        flush=True,
    )
    marker.write_text(f"{end} {stats.samples}")
    if args.fleet_read:
        record(prom, workdir, end=end)
    return end, stats.samples


def record(prom: PrometheusServer, workdir: Path, *, end: int) -> None:
    """The recording rules' series (docs/RECORDING-RULES.md) for the slots a read reaches, as
    a ruler would have written them: promtool evaluates the generated rules file against the
    server. They stay inside one of promtool's 2 h blocks: at a block boundary promtool skips
    an evaluation, a fleet-wide hole the read would rightly read raw
    (tests/support/recorded_rig.py)."""
    start = end // RULE_BLOCK_S * RULE_BLOCK_S + 60
    if end - start < RECORDED_S:
        print(f"  no recordings: only {end - start} s of {end}'s block before it", flush=True)
        return
    began = time.perf_counter()
    with prom:  # the server answers promtool's queries; a restart loads the blocks
        record_rules(prom, workdir=workdir, start=start, end=end)
    (workdir / RECORDED_MARKER).write_text(f"{start} {end}")
    print(f"  recorded {end - start} s of slots in {time.perf_counter() - began:.0f} s", flush=True)


def mixed_fleet(workloads: int, gpus_per_workload: int) -> list[GpuSeries]:
    """Most workloads idle, some busy, some bursty: the fleet an admin would run this on."""
    profiles = {
        i: Profile.busy(80) if i % 10 < 3 else Profile.bursty(period_s=900, busy_s=120)
        for i in range(workloads)
        if i % 10 < 4
    }
    return fleet(
        workloads=workloads,
        gpus_per_workload=gpus_per_workload,
        profile_for=profiles,
        default=Profile.idle(1),
        namespaces=20,
    )


def measure(
    url: str, *, policy: PolicySettings, at: datetime, args: argparse.Namespace
) -> tuple[list[Timing], dict[str, list[float]]]:
    """Adapter reads and bare query sets alternate, so both see the same machine load."""
    settings = PrometheusSettings(url=url, timeout=timedelta(seconds=args.timeout))
    span = QueryWindow(WINDOW, policy.slot, policy.idle_since_lookback, THRESHOLD)
    built = build_queries(settings.signals, span=span, templates=QueryTemplates())
    flat = [query for queries in built.values() for query in queries]
    source = PrometheusMetricSource(prometheus=settings, policy=policy)
    reads: list[float] = []
    bare: list[float] = []
    per_query: dict[str, list[float]] = {stat.value: [] for stat in built}
    sizes: list[int] = []
    with requests.Session() as session:
        try:
            for _ in range(args.repeat):
                reads += _repeat(1, lambda: _checked(source, at))
                bare += _repeat(1, lambda: sizes.extend(_send(session, url, built, at, per_query)))
        finally:
            source.close()
        narrowed = [
            narrow(query, namespace=f"team-{i % 20}", pod=f"wl-{i:04d}-worker-0")
            for i in range(args.workloads)
            for queries in built.values()
            for query in queries  # one per signal
        ]
        per_workload = _repeat(1, lambda: _send_all(session, url, narrowed, at))
    timings = [
        Timing("adapter read, 1 view (fleet-wide)", source.queries_issued // args.repeat, reads),
        *measure_views(settings, policy=policy, at=at, repeat=args.repeat),
        Timing("same PromQL, plain requests", len(flat), bare, sum(sizes) // args.repeat),
        Timing("one query set per workload, plain requests", len(narrowed), per_workload),
    ]
    return timings, per_query


def measure_views(
    settings: PrometheusSettings, *, policy: PolicySettings, at: datetime, repeat: int
) -> list[Timing]:
    """One read for one view, one read for four, and four reads of one view each, alternated."""
    cases: dict[str, Callable[[PrometheusMetricSource], object]] = {
        "read_views, 1 view": lambda s: s.read_views(FOUR_VIEWS[:1], now=at),
        f"read_views, {len(FOUR_VIEWS)} views (one shared read)": lambda s: s.read_views(
            FOUR_VIEWS, now=at
        ),
        f"{len(FOUR_VIEWS)} reads of 1 view each (a loop over views)": lambda s: [
            s.read_views([view], now=at) for view in FOUR_VIEWS
        ],
    }
    sources = {label: PrometheusMetricSource(prometheus=settings, policy=policy) for label in cases}
    seconds: dict[str, list[float]] = {label: [] for label in cases}
    try:
        for _ in range(repeat):
            for label, case in cases.items():
                seconds[label] += _repeat(1, lambda: case(sources[label]))  # noqa: B023
    finally:
        for made in sources.values():
            made.close()
    return [
        Timing(label, sources[label].queries_issued // repeat, seconds[label]) for label in cases
    ]


def narrow(query: str, *, namespace: str, pod: str) -> str:
    """The query restricted to one workload's pod, as a per-workload design would send it."""
    matchers = f'exported_namespace="{namespace}",exported_pod="{pod}"'

    def add(match: re.Match[str]) -> str:
        existing = match.group(3)
        return f"{match.group(1)}{{{existing + ',' if existing else ''}{matchers}}}"

    return _METRIC.sub(add, query)


def report(
    timings: list[Timing],
    per_query: dict[str, list[float]],
    *,
    args: argparse.Namespace,
    samples: int,
) -> None:
    print()
    print(f"Machine: {_machine()}")
    print(
        f"Fleet: {args.workloads} workloads, {args.workloads * args.gpus_per_workload} GPUs, "
        f"{args.hours} h of history every {args.step} s ({samples:,} samples), "
        f"window {WINDOW}, lookback {args.lookback_hours} h"
    )
    print()
    print("| what | requests per read | wall time per read (median) | response bytes |")
    print("|---|---:|---:|---:|")
    for timing in timings:
        size = f"{timing.result_bytes:,}" if timing.result_bytes else ""
        runs = f" (of {len(timing.seconds)})" if len(timing.seconds) > 1 else ""
        print(f"| {timing.label} | {timing.requests:,} | {timing.median:.3f} s{runs} | {size} |")
    print()
    print("| fleet-wide query | median | min | max |")
    print("|---|---:|---:|---:|")
    for name, seconds in per_query.items():
        print(
            f"| {name} | {statistics.median(seconds):.3f} s | {min(seconds):.3f} s "
            f"| {max(seconds):.3f} s |"
        )


def _send(
    session: requests.Session,
    url: str,
    queries: Mapping[Stat, Sequence[str]],
    at: datetime,
    seconds: dict[str, list[float]],
) -> list[int]:
    """Each stat's queries (one per signal) in turn, timed together."""
    sizes = []
    for stat, texts in queries.items():
        began = time.perf_counter()
        sizes += _send_all(session, url, list(texts), at)
        seconds[stat.value].append(time.perf_counter() - began)
    return sizes


def _send_all(session: requests.Session, url: str, queries: list[str], at: datetime) -> list[int]:
    sizes = []
    for query in queries:
        params = {"query": query, "time": f"{at.timestamp():.3f}"}
        response = session.get(f"{url}/api/v1/query", params=params, timeout=600)
        response.raise_for_status()
        sizes.append(len(response.content))
    return sizes


def _checked(source: PrometheusMetricSource, at: datetime) -> None:
    usage = source.read_views(FOUR_VIEWS[:1], now=at)[FOUR_VIEWS[0]]
    if usage.failure is not None:
        raise SystemExit(f"read failed: {usage.failure}")


def _repeat(times: int, action: Callable[[], object]) -> list[float]:
    seconds = []
    for _ in range(times):
        began = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - began)
    return seconds


def _warm_up(url: str, at: datetime) -> None:
    """Touch every series once so the first measured read does not pay for cold pages."""
    query = " + ".join(f"sum(count_over_time({metric}[1d]))" for metric in ALL_METRICS)
    params = {"query": query, "time": f"{at.timestamp():.3f}"}
    requests.get(f"{url}/api/v1/query", params=params, timeout=300).raise_for_status()


def _machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown CPU",
    )
    memory = subprocess.run(["free", "-h"], capture_output=True, text=True, check=False).stdout
    total = memory.splitlines()[1].split()[1] if memory else "?"
    version = subprocess.run(
        ["prometheus", "--version"], capture_output=True, text=True, check=False
    ).stdout.split("\n", 1)[0]
    cores = subprocess.run(["nproc"], capture_output=True, text=True, check=False).stdout.strip()
    return f"{cores} cores (nproc), {cpu}, {total} RAM, {version}"


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--gpus-per-workload", type=int, default=4)
    parser.add_argument("--hours", type=int, default=3, help="history to backfill")
    parser.add_argument("--step", type=int, default=30, help="scrape interval of the history, s")
    parser.add_argument(
        "--lookback-hours",
        type=int,
        default=24,
        help="policy.idleSinceLookback for the last-busy query",
    )
    parser.add_argument("--repeat", type=int, default=5, help="fleet-wide reads to time")
    parser.add_argument("--workdir", help="keep Prometheus data here (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="do not delete the workdir")
    parser.add_argument("--reuse", action="store_true", help="reuse a kept --workdir's history")
    parser.add_argument("--timeout", type=float, default=60, help="adapter request timeout, s")
    parser.add_argument(
        "--fleet-read", action="store_true", help="the read beside the cheapest formulation"
    )
    parser.add_argument("--before", help="with --fleet-read: a tree holding an older autoscaler/")
    parser.add_argument("--lean", action="store_true", help="with --fleet-read: no evidence reads")
    return parser.parse_args(argv)


if __name__ == "__main__":
    main()
