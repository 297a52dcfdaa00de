"""`idle-gpu-autoscaler demo` serves the real REST API and the KEDA scaler on loopback.

The demo runs as a person starts it, in its own process at max speed; the story ends within a
second or two, so the calls happen in the `--duration` window, with the token it printed.
"""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import grpc
import httpx
import pytest

from autoscaler.keda import externalscaler_pb2 as pb
from autoscaler.keda import externalscaler_pb2_grpc as pb_grpc

REPO = Path(__file__).resolve().parents[2]
DURATION_S = 4  # the window for the calls, after the story and its summary
DEADLINE_S = 30.0  # for every wait: a hung demo fails the test, it never hangs it
SERVING = "serving for"


@dataclass
class Demo:
    process: subprocess.Popen[str]
    lines: queue.Queue[str | None]  # None: stdout closed
    printed: list[str]

    def read_until(self, prefix: str) -> str:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert line is not None, "the demo ended early:\n" + "".join(self.printed)
            self.printed.append(line)
            if line.startswith(prefix):
                return line.rstrip("\n")

    def value(self, label: str) -> str:
        return self.read_until(f"{label}: ").split(": ", 1)[1]


def _drain(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


@contextmanager
def started(*after_the_story: str, sigint_ignored: bool = False) -> Iterator[Demo]:
    """The demo at max speed with plain lines, as a person would start it from the repo."""
    command = [sys.executable, "-m", "autoscaler", "demo", "--speed", "max", "--non-interactive"]
    if sigint_ignored:  # as a script's background job starts: SIGINT ignored, kept by exec
        command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *command]
    process = subprocess.Popen(
        [*command, *after_the_story], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    assert process.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=_drain, args=(process.stdout, lines), daemon=True)
    reader.start()
    try:
        yield Demo(process, lines, [])
    finally:
        try:
            process.wait(timeout=DEADLINE_S)  # it ends by itself after the window
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=DEADLINE_S)
        process.stdout.close()


@pytest.fixture
def demo() -> Iterator[Demo]:
    with started("--duration", str(DURATION_S)) as running:
        yield running


@pytest.fixture
def serving_demo() -> Iterator[Demo]:
    with started("--serve") as running:
        try:
            yield running
        finally:
            if running.process.poll() is None:
                running.process.send_signal(signal.SIGINT)


def by_owner(listing: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["owner"]["name"]: item for item in listing["items"]}


def is_active(address: str, namespace: str, workload: str) -> bool:
    metadata = {"scalerAddress": address, "namespace": namespace, "workload": workload}
    ref = pb.ScaledObjectRef(name="so", namespace=namespace, scalerMetadata=metadata)
    with grpc.insecure_channel(address) as channel:
        answer = pb_grpc.ExternalScalerStub(channel).IsActive(ref, timeout=5)
    return bool(answer.result)


def test_the_demo_serves_the_api_and_the_scaler_with_its_token_and_still_exits_zero(
    demo: Demo,
) -> None:
    rest, scaler, token = demo.value("REST"), demo.value("gRPC"), demo.value("token")
    demo.read_until(SERVING)  # the story and its summary are over; the window opens
    auth = {"Authorization": f"Bearer {token}"}

    with httpx.Client(base_url=rest, timeout=5) as http:
        listing = http.get("/api/v1/workloads", headers=auth)
        exempted = http.put(
            "/api/v1/workloads/demo/second-raycluster/exemption",
            json={"duration": "2h", "reason": "showing the demo"},
            headers=auth,
        )
        refused = http.put(
            "/api/v1/workloads/demo/second-raycluster/exemption",
            json={"duration": "2h", "reason": "showing the demo"},
            headers={"Authorization": "Bearer not-the-demo-token"},
        )
    rows = by_owner(listing.json())
    first, second = rows["first-raycluster"]["name"], rows["second-raycluster"]["name"]
    second_is_active = is_active(scaler, "demo", second)
    first_is_active = is_active(scaler, "demo", first)

    assert rest.startswith("http://127.0.0.1:") and scaler.startswith("127.0.0.1:")
    assert listing.status_code == 200
    assert (rows["first-raycluster"]["state"], rows["second-raycluster"]["state"]) == (
        "deactivated",
        "busy",
    )
    assert exempted.status_code == 200, exempted.text
    assert exempted.json()["annotated"] == "RayCluster demo/second-raycluster"
    assert exempted.json()["exemption"]["by"] == "demo-admin"
    assert refused.status_code == 401
    assert (second_is_active, first_is_active) == (True, False)
    assert demo.process.wait(timeout=DEADLINE_S) == 0


def test_demo_serve_keeps_serving_after_the_story_until_ctrl_c_then_exits_130(
    serving_demo: Demo,
) -> None:
    rest, token = serving_demo.value("REST"), serving_demo.value("token")
    serving_demo.read_until("serving until Ctrl-C")
    time.sleep(2)  # longer than a story at max speed: still up because of --serve
    auth = {"Authorization": f"Bearer {token}"}

    with httpx.Client(base_url=rest, timeout=5) as http:
        listing = http.get("/api/v1/workloads", headers=auth)
    still_running = serving_demo.process.poll() is None
    serving_demo.process.send_signal(signal.SIGINT)

    assert listing.status_code == 200 and still_running
    assert serving_demo.process.wait(timeout=DEADLINE_S) == 130


def test_ctrl_c_ends_the_serving_demo_even_when_it_was_started_with_sigint_ignored() -> None:
    with started("--serve", sigint_ignored=True) as demo:
        demo.read_until("serving until Ctrl-C")
        demo.process.send_signal(signal.SIGINT)

        assert demo.process.wait(timeout=DEADLINE_S) == 130


def test_the_commands_the_header_offers_work_as_printed(serving_demo: Demo) -> None:
    cli = serving_demo.value("try the API")
    keda = serving_demo.value("try KEDA")
    serving_demo.read_until("serving until Ctrl-C")

    listing, answer = (
        subprocess.run(
            ["bash", "-c", line],
            check=False,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
        )
        for line in (cli, keda)
    )

    assert listing.returncode == 0, listing.stderr
    assert "RayCluster/first-raycluster" in listing.stdout and "deactivated" in listing.stdout
    assert (answer.returncode, answer.stdout) == (0, "False\n"), answer.stderr  # deactivated
