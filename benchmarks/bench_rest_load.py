"""REST reads under load against the real `serve` process: throughput, open-loop latency, bursts.

Run by hand from the repository root (needs prometheus and promtool; a few minutes):

    python -m benchmarks.bench_rest_load                      # 1,000 Workloads, 60 s at 50/s
    python -m benchmarks.bench_rest_load --seconds 5 --open-seconds 20   # a quick look

`serve` runs over the fleet of `serve_rig.py`; every request carries a bearer token that may
list Workloads everywhere (reviewed by the test API server, cached by `serve` as in
production). Two reads: the whole listing (`GET /api/v1/workloads`, every row of the fleet)
and one workload (`GET /api/v1/workloads/{namespace}/{name}`, a different one each time).
For each, side by side in one run:

  1. one request alone: requests one at a time on one keep-alive connection, back to back (a
     warm pipeline) and one every 0.1 s (each on a server gone idle, as a lone caller sees it);
  2. throughput: 1, 50 and 200 keep-alive clients each sending its next request as soon as the
     last one is answered, for `--seconds`;
  3. open loop: `--rate` requests a second on a schedule, for `--open-seconds`, each timed from
     its scheduled moment (so a slow answer delays and counts against the ones after it), on a
     pool of keep-alive connections;
  4. the burst: 200 requests sent at once on 200 connections, `--bursts` times.

The client is a few lines of asyncio over raw sockets (HTTP/1.1, Content-Length bodies), so
the client costs little beside the server on the shared cores.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from benchmarks.bench_keda import machine
from benchmarks.serve_rig import ServeRig, observed

Paths = Callable[[], str]  # the next request's path


class Connection:
    """One keep-alive HTTP/1.1 connection; `get` returns once the whole body is read."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader, self._writer = reader, writer

    @classmethod
    async def open(cls, url: str) -> Connection:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        return cls(reader, writer)

    async def get(self, path: str, *, headers: bytes) -> str | None:
        """None once the whole body is read, if the answer is 200; else what went wrong."""
        self._writer.write(b"GET %s HTTP/1.1\r\nHost: bench\r\n%s\r\n" % (path.encode(), headers))
        head = await self._reader.readuntil(b"\r\n\r\n")
        status, length = _status_and_length(head)
        body = await self._reader.readexactly(length)
        return None if status == 200 else f"GET {path}: {status} {body[:200]!r}"

    async def close(self) -> None:
        self._writer.close()
        await self._writer.wait_closed()


def _status_and_length(head: bytes) -> tuple[int, int]:
    lines = head.split(b"\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in lines if line.lower().startswith(b"content-length:")
    )
    return int(lines[0].split()[1]), length


@dataclass
class Client:
    url: str
    headers: bytes
    errors: list[str] = field(default_factory=list)  # answers other than 200, counted apart

    async def connections(self, count: int) -> list[Connection]:
        return list(await asyncio.gather(*(Connection.open(self.url) for _ in range(count))))

    async def timed(self, connection: Connection, path: str) -> float:
        started = time.perf_counter()
        await self.get(connection, path)
        return time.perf_counter() - started

    async def get(self, connection: Connection, path: str) -> None:
        error = await connection.get(path, headers=self.headers)
        if error is not None:
            self.errors.append(error)


@dataclass
class Result:
    read: str
    how: str
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def per_second(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def p(self, percent: int) -> float:
        return 1000 * statistics.quantiles(self.latencies, n=100, method="inclusive")[percent - 1]

    def line(self) -> str:
        rate = f"{self.per_second:,.0f}" if self.seconds else ""
        return (
            f"| {self.read} | {self.how} | {len(self.latencies):,} | {rate} "
            f"| {self.p(50):.1f} | {self.p(99):.1f} | {1000 * max(self.latencies):.1f} |"
        )


async def alone(client: Client, paths: Paths, *, requests: int, gap: float = 0.0) -> Result:
    """Requests one at a time on one keep-alive connection, `gap` seconds apart (0: each
    as soon as the last is answered, a warm pipeline; 0.1: each on a server gone idle)."""
    [connection] = await client.connections(1)
    for _ in range(10):  # warm-up: the token review, the first rendering
        await client.timed(connection, paths())
    result = Result("", f"alone, every {gap:g} s" if gap else "alone, back to back")
    for _ in range(requests):
        await asyncio.sleep(gap)
        result.latencies.append(await client.timed(connection, paths()))
    await connection.close()
    return result


async def closed_loop(client: Client, paths: Paths, *, clients: int, seconds: float) -> Result:
    """`clients` connections, each sending its next request when the last is answered."""
    connections = await client.connections(clients)
    result = Result("", f"{clients} clients, closed loop")
    deadline = time.perf_counter() + seconds

    async def keep_asking(connection: Connection) -> None:
        while time.perf_counter() < deadline:
            result.latencies.append(await client.timed(connection, paths()))

    started = time.perf_counter()
    await asyncio.gather(*(keep_asking(c) for c in connections))
    result.seconds = time.perf_counter() - started
    for connection in connections:
        await connection.close()
    return result


async def open_loop(client: Client, paths: Paths, *, rate: float, seconds: float) -> Result:
    """`rate` requests a second on schedule, each timed from its scheduled moment."""
    pool: asyncio.Queue[Connection] = asyncio.Queue()
    for connection in await client.connections(64):
        pool.put_nowait(connection)
    result = Result("", f"open loop, {rate:g}/s for {seconds:g} s")

    async def one(due: float) -> None:
        await asyncio.sleep(max(due - time.perf_counter(), 0))
        connection = await pool.get()
        await client.get(connection, paths())
        result.latencies.append(time.perf_counter() - due)
        pool.put_nowait(connection)

    start = time.perf_counter() + 0.1
    await asyncio.gather(*(one(start + k / rate) for k in range(int(rate * seconds))))
    while not pool.empty():
        await pool.get_nowait().close()
    return result


async def bursts(client: Client, paths: Paths, *, size: int, times: int) -> Result:
    """`size` requests sent at once on `size` connections, `times` times."""
    connections = await client.connections(size)
    result = Result("", f"burst of {size} at once, x{times}")
    for _ in range(times):
        result.latencies += await asyncio.gather(*(client.timed(c, paths()) for c in connections))
    for connection in connections:
        await connection.close()
    return result


async def measure(rig: ServeRig, args: argparse.Namespace, client: Client) -> list[Result]:
    reads = {"list": lambda: "/api/v1/workloads", "one": one_workload_paths(rig)}
    results = []
    for read, paths in reads.items():
        found = [
            await alone(client, paths, requests=args.alone),
            await alone(client, paths, requests=args.alone // 2, gap=0.1),
        ]
        for clients in args.clients:
            found.append(await closed_loop(client, paths, clients=clients, seconds=args.seconds))
        found.append(await open_loop(client, paths, rate=args.rate, seconds=args.open_seconds))
        found.append(await bursts(client, paths, size=200, times=args.bursts))
        results += [_named(read, result) for result in found]
    return results


def one_workload_paths(rig: ServeRig) -> Paths:
    cycle: Iterator[tuple[str, str]] = itertools.cycle(rig.targets)
    return lambda: "/api/v1/workloads/{}/{}".format(*next(cycle))


def _named(read: str, result: Result) -> Result:
    result.read = read
    return result


def report(results: list[Result]) -> None:
    print("| read | load | requests | requests/s | p50 ms | p99 ms | max ms |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for result in results:
        print(result.line())
    print(
        "\n| read | p99 at the open loop, ms | ÷ median alone, back to back "
        "| ÷ median alone, every 0.1 s |"
    )
    print("|---|---:|---:|---:|")
    for read in dict.fromkeys(result.read for result in results):
        mine = [result for result in results if result.read == read]
        [back, spaced, opened] = (
            next(r for r in mine if r.how.startswith(how))
            for how in ("alone, back", "alone, every", "open loop")
        )
        p99 = opened.p(99)
        print(f"| {read} | {p99:.1f} | {p99 / back.p(50):.1f} | {p99 / spaced.p(50):.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=1000, help="Workloads in the fleet")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 50, 200])
    parser.add_argument("--seconds", type=float, default=10, help="per closed-loop measurement")
    parser.add_argument("--rate", type=float, default=50, help="open loop, requests a second")
    parser.add_argument("--open-seconds", type=float, default=60)
    parser.add_argument("--alone", type=int, default=200, help="requests one at a time")
    parser.add_argument("--bursts", type=int, default=5)
    parser.add_argument("--before", type=Path, help="run serve from an older autoscaler/ here")
    args = parser.parse_args()
    with ServeRig.running(workloads=args.workloads, before=args.before) as rig:
        states = rig.snapshot_summary()
        client = Client(rig.api, f"Authorization: Bearer {rig.token}\r\n".encode())
        with observed(rig) as notes:
            results = asyncio.run(measure(rig, args, client))
        failures = rig.failures()
    print(f"Machine: {machine()}; serve from {args.before or 'this tree'}")
    print(f"Snapshot: {args.workloads:,} Workloads {states}; {notes.text()}\n")
    report(results)
    print(f"\n{len(client.errors)} answers other than 200 (not timed apart)", *client.errors[:5])
    print(f"serve's log: {len(failures)} errors", *failures[:5], sep="\n")


if __name__ == "__main__":
    main()
