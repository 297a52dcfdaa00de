"""Keep-alive latency of the REST API: four requests on one connection, many connections.

Run by hand from the repository root (a few seconds):

    python -m benchmarks.bench_keepalive              # 25 connections of 4 requests each

The API runs as in the tests (`tests/api/rig.py`: the test Kubernetes API server, one
RayCluster, one cycle); each connection sends four `GET /api/v1/workloads` one after the other,
as the rig's admin.
Without TCP_NODELAY on the accepted socket, every request after the first waits ~40 ms for
Nagle's algorithm and the client's delayed ACK; with it, all four take about the same time.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import httpx

from tests.api.rig import ApiRig

REQUESTS_PER_CONNECTION = 4


def one_connection(url: str, *, headers: dict[str, str]) -> list[float]:
    """Milliseconds per request, on one keep-alive connection."""
    times = []
    with httpx.Client(base_url=url, headers=headers) as client:
        for _ in range(REQUESTS_PER_CONNECTION):
            started = time.perf_counter()
            client.get("/api/v1/workloads").raise_for_status()
            times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=25)
    args = parser.parse_args()
    with ApiRig() as rig:
        rig.add_raycluster("team-a", "alice-rc")
        rig.cycle()
        reader = rig.as_user("admin")  # may read every namespace
        runs = [one_connection(rig.url, headers=reader) for _ in range(args.connections)]
    print(f"{platform.python_version()}, {args.connections} connections")
    for index in range(REQUESTS_PER_CONNECTION):
        column = [run[index] for run in runs]
        print(f"request {index + 1}: median {statistics.median(column):.1f} ms")


if __name__ == "__main__":
    main()
