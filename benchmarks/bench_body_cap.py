"""Server memory under a 20 MB request body: the body cap against no cap.

Run by hand from the repository root (about ten seconds):

    python -m benchmarks.bench_body_cap

The API runs in this process as in the tests (`tests/api/rig.py`), so the process's peak resident
memory is the server's (the client streams its body from a generator and never holds it).
Alice, who may exempt her own RayCluster, sends one JSON body to the exemption endpoint:
20 MiB under the default cap (64 KiB: answered 413 before the body is read), and, for
contrast, 15 MiB under the largest cap the settings allow (16 MiB: the body is read and
parsed, then refused 422).
"""

from __future__ import annotations

import platform
from collections.abc import Iterator
from pathlib import Path

import httpx

from autoscaler.settings.api import ApiSettings
from tests.api.rig import ApiRig

MIB = 1024 * 1024
CHUNK = 64 * 1024


def peak_resident_mib() -> float:
    """The peak resident memory (VmHWM) of this process so far, MiB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def body(size: int) -> Iterator[bytes]:
    """A JSON object whose one string field is `size` bytes long, produced chunk by chunk."""
    yield b'{"reason": "'
    for _ in range(size // CHUNK):
        yield b"x" * CHUNK
    yield b'", "for": "1h"}'


def send_once(settings: ApiSettings, *, size: int) -> tuple[int, float]:
    """The status of one request of `size` bytes and how much the process grew meanwhile."""
    with ApiRig(settings=settings) as rig:
        rig.add_raycluster("team-a", "alice-rc")
        rig.cycle()
        before = peak_resident_mib()
        headers = {**rig.as_user("alice"), "content-type": "application/json"}
        try:
            status = rig.http.put(
                "/api/v1/workloads/team-a/alice-rc/exemption", content=body(size), headers=headers
            ).status_code
        except httpx.TransportError:  # the server answered and closed while we still sent
            status = 413
        return status, peak_resident_mib() - before


def main() -> None:
    print(f"Python {platform.python_version()}, bodies sent chunked")
    default = ApiSettings(host="127.0.0.1", port=0)
    largest = ApiSettings(host="127.0.0.1", port=0, max_request_bytes=16 * MIB)
    for label, settings, size in (
        ("20 MiB, cap 64 KiB (default)", default, 20 * MIB),
        ("15 MiB, cap 16 MiB (the largest allowed)", largest, 15 * MIB),
    ):
        status, grown = send_once(settings, size=size)
        print(f"{label}: HTTP {status}, peak resident memory grew {grown:.1f} MiB")


if __name__ == "__main__":
    main()
