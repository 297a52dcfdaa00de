"""IsActive and GetMetrics against the real `serve` process, next to a constant-answer server.

Run by hand from the repository root (needs prometheus and promtool; a few minutes):

    python -m benchmarks.bench_keda_serve                 # 1,000 Workloads; 100 and 1,000 callers
    python -m benchmarks.bench_keda_serve --calls 2000    # a quick look

`serve` runs over the fleet of `serve_rig.py` (the test Kubernetes API server, a real
Prometheus, a live exporter), its KEDA external scaler on plaintext gRPC as deployed. The
constant server (`bench_keda.ConstantServicer`) runs in a child process of its own, like
`serve`; the callers run in this process on grpc.aio channels, the same callers for both.

Each burst sends one call per caller at once, each for its own ScaledObject naming its own
Workload with the metadata KEDA sends (`bench_keda.scaled_object_ref`); callers beyond the
fleet's size wrap around. Snapshots are the loop's own, one a minute: the table says how many
cycles ran during the measurement (each starts the per-snapshot judgement cache afresh, and
its CPU competes with the answers, as in production).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
from collections.abc import Awaitable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from benchmarks import bench_keda  # a namespace package, run from the repository root
from benchmarks.serve_rig import ServeRig, observed


def run_constant(conn: Connection) -> None:
    """Child process: the constant server until the parent says stop."""
    port, stop = bench_keda.serve_constant()
    conn.send(port)
    conn.recv()
    stop()


def calls(rig: ServeRig) -> tuple[tuple[str, bench_keda.Call], ...]:
    refs = [
        bench_keda.scaled_object_ref(name=f"so-{name}", namespace=namespace, workload=name)
        for namespace, name in rig.targets
    ]

    def is_active(stub: Any, i: int) -> Awaitable[object]:
        return stub.IsActive(refs[i], timeout=5)  # type: ignore[no-any-return]

    def get_metrics(stub: Any, i: int) -> Awaitable[object]:
        request = bench_keda.pb.GetMetricsRequest(scaledObjectRef=refs[i])
        return stub.GetMetrics(request, timeout=5)  # type: ignore[no-any-return]

    return (("IsActive", is_active), ("GetMetrics", get_metrics))


def ratios(rows: list[bench_keda.Row]) -> list[str]:
    """p99 (and p50) of serve over the constant server, per RPC and number of callers."""
    found = {(row.rpc, row.callers, row.server): row.latencies for row in rows}
    lines = []
    for rpc, callers, server in found:
        if server != "serve":
            continue
        ours, floor = found[(rpc, callers, "serve")], found[(rpc, callers, "constant")]
        p50 = statistics.median(ours) / statistics.median(floor)
        p99 = _p99(ours) / _p99(floor)
        lines.append(f"| {rpc} | {callers:,} | {p50:.2f} | {p99:.2f} |")
    return lines


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callers", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--calls", type=int, default=20_000, help="calls per row, per server")
    parser.add_argument("--workloads", type=int, default=1000, help="Workloads in the fleet")
    parser.add_argument("--before", type=Path, help="run serve from an older autoscaler/ here")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    constant = context.Process(target=run_constant, args=(child,), daemon=True)
    constant.start()
    try:
        with ServeRig.running(workloads=args.workloads, before=args.before) as rig:
            states = rig.snapshot_summary()
            with observed(rig) as notes:
                rows = asyncio.run(
                    bench_keda.measure_servers(
                        {"serve": rig.keda_port, "constant": parent.recv()},
                        calls=calls(rig),
                        callers=args.callers,
                        calls_per_row=args.calls,
                        workloads=len(rig.targets),
                    )
                )
    finally:
        parent.send("stop")
        constant.join(10)
    print(f"Machine: {bench_keda.machine()}; serve from {args.before or 'this tree'}")
    print(f"Snapshot: {args.workloads:,} Workloads {states}; {notes.text()}")
    print(f"{args.calls:,} calls per row (bursts of the callers' number)\n")
    print("| RPC | concurrent callers | server | calls | p50 ms | p99 ms | max ms |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for row in rows:
        print(row.line())
    print("\n| RPC | concurrent callers | p50 serve / constant | p99 serve / constant |")
    print("|---|---:|---:|---:|")
    print("\n".join(ratios(rows)))


if __name__ == "__main__":
    main()
