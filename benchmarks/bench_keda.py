"""IsActive and GetMetrics latency of the KEDA scaler, next to a constant-answer gRPC server.

Run by hand from the repository root (about a minute on two cores):

    python -m benchmarks.bench_keda                 # 100 and 1,000 concurrent callers
    python -m benchmarks.bench_keda --calls 2000    # a quick look
    python -m benchmarks.bench_keda --calls 2000 --streams 200 1000 --rounds 5

With `--streams`, after the rows above: so many StreamIsActive streams are opened and held
open (each on a Workload IsActive calls idle), then each round the child publishes a
snapshot that pauses everything, or lifts the pause (every stream's answer flips), timing the
publish itself, while the parent sends a burst of IsActive calls (as many as the first
`--callers`) and waits for every stream's flip. Targets: a publish takes well under a
millisecond (it only schedules wake-ups), and IsActive stays within KEDA's 3-second deadline
whatever the number of streams (tests/keda/test_streams.py asserts the behaviour without
timing it).

Both servers run in one child process, each on its own thread and event loop as in the service
(grpc.aio, plaintext); the callers run in this process on grpc.aio channels, so callers and
servers do not share a GIL. The constant server answers without looking at anything: the gap
between the two is what judging from the snapshot costs.

Each round publishes a fresh snapshot (an empty judgement cache, as after every cycle), then
every caller sends one call at once for its own ScaledObject: KEDA's polling burst. Each
caller's target is a different Workload of a fleet of `--workloads`, half busy, half idle.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import platform
import statistics
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from multiprocessing.connection import Connection
from typing import Any

import grpc

from autoscaler.domain.models import Pauses, PodRecord, Snapshot, WorkloadStatus
from autoscaler.domain.policy.decisions import decide
from autoscaler.engine.cycle.snapshots import SnapshotStore
from autoscaler.keda import externalscaler_pb2 as pb
from autoscaler.keda import externalscaler_pb2_grpc as pb_grpc
from autoscaler.keda.answers import KedaAnswers
from autoscaler.keda.server import KedaGrpcServer
from autoscaler.keda.targets import Judging
from autoscaler.settings.keda import KedaTlsSettings
from tests.support.domain_builders import NOW, a_policy, a_workload, usage

POLICY = a_policy()
CHANNELS = 8  # callers share a few connections, as KEDA's operator does
Call = Callable[[Any, int], Awaitable[object]]


@dataclass(frozen=True)
class FixedClock:
    at: datetime

    def now(self) -> datetime:
        return self.at


def fleet_snapshot(workloads: int) -> Snapshot:
    infos, fleet = [], usage()
    for i in range(workloads):
        info = a_workload("ml", f"rc-{i}").gpu_pod(f"rc-{i}-0").keda().build()
        infos.append(info)
        busy = i % 2 == 0
        fleet.gpu("ml", f"rc-{i}-0", peak=0.7 if busy else 0.01, last_busy=NOW if busy else None)
    read = {"default": fleet.build()}
    # As the loop leaves them: KEDA-managed, each decision carrying its usage verdict.
    rows = tuple(
        WorkloadStatus(info, decide(info, read, policy=POLICY, pauses=Pauses(), now=NOW))
        for info in infos
    )
    return Snapshot(
        cycle=1,
        taken_at=NOW,
        workloads=rows,
        cluster_ok=True,
        metrics_ok=True,
        dry_run=True,
        usage=read,
        gpu_pods=tuple(PodRecord("ml", pod) for info in infos for pod in info.pods),
    )


class ConstantServicer(pb_grpc.ExternalScalerServicer):
    """The floor: the same RPCs answered with fixed messages."""

    async def IsActive(self, request: pb.ScaledObjectRef, context: Any) -> pb.IsActiveResponse:
        return pb.IsActiveResponse(result=True)

    async def GetMetrics(
        self, request: pb.GetMetricsRequest, context: Any
    ) -> pb.GetMetricsResponse:
        value = pb.MetricValue(metricName="constant", metricValue=50, metricValueFloat=50.0)
        return pb.GetMetricsResponse(metricValues=[value])


def serve_constant() -> tuple[int, Callable[[], None]]:
    started: list[int] = []
    ready, stop = threading.Event(), threading.Event()

    async def main() -> None:
        server = grpc.aio.server()
        pb_grpc.add_ExternalScalerServicer_to_server(ConstantServicer(), server)
        started.append(server.add_insecure_port("127.0.0.1:0"))
        await server.start()
        ready.set()
        while not stop.is_set():
            await asyncio.sleep(0.05)
        await server.stop(0)

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("the constant server did not start")

    def halt() -> None:
        stop.set()
        thread.join()

    return started[0], halt


def serve_both(conn: Connection, workloads: int) -> None:
    """Child process: both servers; publishes a fresh snapshot whenever asked."""
    snapshot, store = fleet_snapshot(workloads), SnapshotStore()
    store.publish(snapshot)
    answers = KedaAnswers(
        latest=store.latest,
        judging=Judging(POLICY.rules),
        profiles=(),
        clock=FixedClock(NOW),
        max_snapshot_age=timedelta(minutes=3),
        logger=logging.getLogger("bench"),
    )
    keda = KedaGrpcServer(
        answers=answers,
        store=store,
        tls=KedaTlsSettings(),
        heartbeat=timedelta(seconds=30),
        address="127.0.0.1:0",
        logger=logging.getLogger("bench"),
    )
    constant_port, stop_constant = serve_constant()
    conn.send((keda.start(), constant_port))
    cycle = 1
    while (message := conn.recv()) != "stop":
        cycle += 1
        if message == "publish":
            store.publish(replace(snapshot, cycle=cycle))
            conn.send("published")
            continue
        assert message in ("pause", "resume")
        flipped = replace(snapshot, cycle=cycle, pauses=Pauses(everything=message == "pause"))
        began = time.perf_counter()
        store.publish(flipped)
        conn.send(time.perf_counter() - began)
    keda.stop(grace=0)
    stop_constant()


def is_active(stub: Any, i: int) -> Awaitable[object]:
    return stub.IsActive(ref(i), timeout=3)  # type: ignore[no-any-return]


def get_metrics(stub: Any, i: int) -> Awaitable[object]:
    return stub.GetMetrics(pb.GetMetricsRequest(scaledObjectRef=ref(i)), timeout=3)  # type: ignore[no-any-return]


_REFS: dict[int, pb.ScaledObjectRef] = {}


def ref(i: int) -> pb.ScaledObjectRef:
    if i not in _REFS:
        _REFS[i] = scaled_object_ref(name=f"so-{i}", namespace="ml", workload=f"rc-{i}")
    return _REFS[i]


def scaled_object_ref(*, name: str, namespace: str, workload: str) -> pb.ScaledObjectRef:
    """What KEDA sends for a ScaledObject whose trigger names a Workload."""
    metadata = {"scalerAddress": "idle-gpu-autoscaler.gpu-ops.svc:9090", "workload": workload}
    return pb.ScaledObjectRef(name=name, namespace=namespace, scalerMetadata=metadata)


async def burst(stubs: list[Any], call: Call, callers: int, *, workloads: int) -> list[float]:
    async def one(i: int) -> float:
        started = time.perf_counter()
        await call(stubs[i % len(stubs)], i % workloads)
        return time.perf_counter() - started

    return list(await asyncio.gather(*(one(i) for i in range(callers))))


@dataclass
class Row:
    server: str
    rpc: str
    callers: int
    latencies: list[float]

    def line(self) -> str:
        q = statistics.quantiles(self.latencies, n=100)
        ms = [1000 * v for v in (q[49], q[98], max(self.latencies))]
        return (
            f"| {self.rpc} | {self.callers:,} | {self.server} | {len(self.latencies):,} "
            f"| {ms[0]:.1f} | {ms[1]:.1f} | {ms[2]:.1f} |"
        )


async def measure(args: argparse.Namespace, conn: Connection, ports: tuple[int, int]) -> list[Row]:
    def publish() -> None:
        conn.send("publish")
        conn.recv()

    return await measure_servers(
        dict(zip(("keda scaler", "constant"), ports, strict=True)),
        calls=(("IsActive", is_active), ("GetMetrics", get_metrics)),
        callers=args.callers,
        calls_per_row=args.calls,
        workloads=args.workloads,
        before_round=publish,
    )


async def measure_servers(
    ports: dict[str, int],
    *,
    calls: Sequence[tuple[str, Call]],
    callers: Sequence[int],
    calls_per_row: int,
    workloads: int,
    before_round: Callable[[], None] = lambda: None,
) -> list[Row]:
    """Each RPC at each number of callers: one warm-up burst per server, then bursts on every
    server in turn (the order alternates per round, so neither always goes first) until each
    row holds `calls_per_row` calls. Equal rows make p99 mean the same at every number of
    callers: with 20 bursts of 100, p99 was the slowest call of one or two bursts."""
    channels = {
        name: [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for _ in range(CHANNELS)]
        for name, port in ports.items()
    }
    stubs = {
        name: [pb_grpc.ExternalScalerStub(c) for c in chans] for name, chans in channels.items()
    }
    rows: list[Row] = []
    for rpc, call in calls:
        for count in callers:
            for pool in stubs.values():
                await burst(pool, call, count, workloads=workloads)  # warm-up, not measured
            found = {name: Row(name, rpc, count, []) for name in stubs}
            for index in range(bursts_for(calls_per_row, count)):
                before_round()
                order = list(stubs.items())
                for name, pool in order if index % 2 == 0 else order[::-1]:
                    found[name].latencies += await burst(pool, call, count, workloads=workloads)
            rows += found.values()
    for chans in channels.values():
        for channel in chans:
            await channel.close()
    return rows


@dataclass
class StreamsRow:
    streams: int
    publishes: list[float]
    answers: list[float]
    flips: list[float]

    def line(self) -> str:
        def ms(values: list[float]) -> str:
            return f"{1000 * statistics.median(values):.2f} | {1000 * max(values):.2f}"

        return (
            f"| {self.streams:,} streams | {len(self.flips)} | {ms(self.publishes)} | "
            f"{ms(self.answers)} | {ms(self.flips)} |"
        )


async def measure_streams(
    args: argparse.Namespace, conn: Connection, port: int, streams: int
) -> StreamsRow:
    """`streams` streams held open on Workloads IsActive calls idle, then each round a
    publish that flips them all, with an IsActive burst sent as it goes out."""
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for _ in range(CHANNELS)]
    stubs = [pb_grpc.ExternalScalerStub(channel) for channel in channels]
    asked = await asyncio.gather(*(is_active(stubs[0], i) for i in range(args.workloads)))
    idle = [i for i, answer in enumerate(asked) if not answer.result]  # type: ignore[attr-defined]
    calls = [
        stubs[n % CHANNELS].StreamIsActive(ref(idle[n % len(idle)]), timeout=3600)
        for n in range(streams)
    ]
    pushes = [call.__aiter__() for call in calls]
    first = await asyncio.gather(*(push.__anext__() for push in pushes))
    assert not any(answer.result for answer in first), "an idle Workload's stream said active"
    row = StreamsRow(streams, [], [], [])
    for index in range(args.rounds):
        paused = index % 2 == 0
        began = time.perf_counter()
        conn.send("pause" if paused else "resume")
        flipped = asyncio.gather(*(push.__anext__() for push in pushes))
        row.answers += await burst(stubs, is_active, args.callers[0], workloads=args.workloads)
        assert all(answer.result is paused for answer in await flipped), "a flip missed"
        row.flips.append(time.perf_counter() - began)
        row.publishes.append(await asyncio.to_thread(conn.recv))
    for call in calls:
        call.cancel()
    if args.rounds % 2:  # the last round paused everything: lift it for the next row
        conn.send("resume")
        await asyncio.to_thread(conn.recv)
    for channel in channels:
        await channel.close()
    return row


def bursts_for(calls_per_row: int, callers: int) -> int:
    """Bursts of `callers` calls that hold at least `calls_per_row` calls (one at least)."""
    return max(1, -(-calls_per_row // callers))


def machine() -> str:
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            model = next(
                line.split(":", 1)[1].strip() for line in info if line.startswith("model name")
            )
    except (OSError, StopIteration):
        pass
    return (
        f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"grpcio {grpc.__version__}, {platform.system()} {platform.release()}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callers", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--calls", type=int, default=20_000, help="calls per row, per server")
    parser.add_argument("--workloads", type=int, default=1000, help="Workloads in the snapshot")
    parser.add_argument("--streams", type=int, nargs="*", default=[], help="streams held open")
    parser.add_argument("--rounds", type=int, default=5, help="flips with the streams open")
    args = parser.parse_args()
    parent, child = multiprocessing.get_context("spawn").Pipe()
    process = multiprocessing.get_context("spawn").Process(
        target=serve_both, args=(child, args.workloads), daemon=True
    )
    process.start()
    if not parent.poll(30):
        raise SystemExit("the servers did not start (see the child's traceback above)")
    ports = parent.recv()
    try:
        rows = asyncio.run(measure(args, parent, ports))
        streams_rows = [
            asyncio.run(measure_streams(args, parent, ports[0], count)) for count in args.streams
        ]
    finally:
        parent.send("stop")
        process.join(10)
    print(f"Machine: {machine()}")
    print(
        f"Fleet: {args.workloads:,} Workloads; {args.calls:,} calls per row, a fresh snapshot "
        "before each round\n"
    )
    print("| RPC | concurrent callers | server | calls | p50 ms | p99 ms | max ms |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for row in rows:
        print(row.line())
    if streams_rows:
        print(
            f"\nWith streams open: {args.rounds} flips, each with {args.callers[0]:,} IsActive "
            "calls at once\n"
        )
        print(
            "| open | flips | publish median ms | publish max ms | IsActive median ms | "
            "IsActive max ms | every stream flipped, median ms | max ms |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for streams_row in streams_rows:
            print(streams_row.line())


if __name__ == "__main__":
    main()
