"""End to end, quota held without work: the real `serve` process on the test API server and
the live Prometheus, with Kueue and the kubelet emulated (tests/support/cluster_emulator.py).

A 3-GPU ClusterQueue, four one-GPU RayClusters, admitted in this order:
- `broken`: its image (ghcr.io/x:v2) cannot be pulled; its pod waits in ImagePullBackOff. It
  is `not-running`, warned (the warning names the image), then deactivated; Kueue then
  admits the next waiter:
- `waiter`: pending behind the quota until `broken` is stopped, then admitted; its pod runs.
- `late`: its image is published a couple of seconds after admission, within the limit: it
  was not-running, then runs, and is never warned nor stopped.
- `timed`: its image cannot be pulled either, but Kueue's waitForPodsReady is in charge of
  its Workload (its PodsReady condition): reported with Kueue's deadline, from the timeout
  Kueue's Configuration ConfigMap sets, and left to Kueue, never warned nor stopped by us.
  The start-up log says in one line what Kueue's Configuration is.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from autoscaler.domain import annotations as keys
from tests.conftest import LiveMetrics
from tests.support.builders import make_raycluster
from tests.support.cluster_emulator import ClusterEmulator
from tests.support.kube_server import ApiError, KubeServer
from tests.support.notice_rig import Stops, poll
from tests.support.prom import free_port
from tests.support.seeding import gpus_of, seed_queues, submit, workload_of
from tests.support.serve_process import ServeProcess, write_config, write_kubeconfig

pytestmark = pytest.mark.slow

BAD_IMAGE, LATE_IMAGE = "ghcr.io/x:v2", "ghcr.io/late:v1"
IMAGES = {"broken": BAD_IMAGE, "late": LATE_IMAGE, "timed": BAD_IMAGE, "waiter": "ray:2.9"}
NOT_RUNNING_AFTER_S, WARN_BEFORE_S = 8, 3
# The admin's waitForPodsReady timeout in Kueue's Configuration (config.kueue.x-k8s.io/v1beta2,
# kueue apis/config/v1beta2/configuration_types.go): far beyond the story, so Kueue's timer
# never fires in it; the reason must quote it, not Kueue's 30m default.
KUEUE_TIMEOUT = "10m"
READER = "not-running-reader"


def config(namespace: str, *, kubeconfig: Path, prometheus: str, api_port: int) -> dict[str, Any]:
    return {
        "prometheus": {"url": prometheus, "timeout": "1s"},
        "cluster": {
            "kubeconfig": str(kubeconfig),
            "serviceNamespace": f"{namespace}-svc",
            # Kueue's Configuration, in this story's own Kueue namespace (KUEUE_TIMEOUT)
            "kueueConfiguration": {"namespace": f"{namespace}-kueue"},
        },
        "policy": {
            "idleWindow": "60s",  # nothing here goes idle: only not-running may be stopped
            "gracePeriod": "1s",
            "notRunningAfter": f"{NOT_RUNNING_AFTER_S}s",
            "minCoverage": 0.5,
            "slot": "1s",
            "staleAfter": "5s",
            "idleSinceLookback": "5m",
            "dryRun": False,
            "namespaces": {"include": [namespace]},
            "warnBefore": f"{WARN_BEFORE_S}s",
        },
        "loop": {"interval": "1s"},
        "watchCache": {"watchTimeout": "1s"},
        "api": {"host": "127.0.0.1", "port": api_port},
        "logging": {"format": "json"},
    }


@dataclass
class Story:
    seen_not_running: dict[str, dict[str, Any]]  # each RayCluster's row while none ran
    broken_warned: dict[str, str]  # broken's annotations once warned
    warning_event: dict[str, Any]  # the warning's Event on broken's Workload
    stopped: dict[str, datetime]  # RayCluster -> when its Workload got spec.active: false
    waiter_admitted: bool
    waiter_running: bool
    late_running: bool
    late_annotations: dict[str, str]
    timed_row: dict[str, Any]
    timed_annotations: dict[str, str]
    metrics: str
    kueue_source: str = ""  # where Kueue's Configuration is read: "<namespace>/<name>"
    serve_log: tuple[str, ...] = ()  # the serve process's log messages


def rows(api: str, namespace: str) -> dict[str, dict[str, Any]]:
    """The REST listing's rows of `namespace`, by RayCluster name; none while the API is
    not up yet."""
    try:
        answer = httpx.get(
            f"{api}/api/v1/workloads",
            params={"namespace": namespace},
            headers={"Authorization": f"Bearer {READER}"},
            timeout=5,
        )
    except httpx.TransportError:
        return {}
    assert answer.status_code == 200, answer.text
    return {row["owner"]["name"]: row for row in answer.json()["items"] if row["owner"]}


@pytest.fixture(scope="module")
def story(
    kube_server: KubeServer, live_metrics: LiveMetrics, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Story]:
    kube_server.reviews.add_token(READER, username=READER)
    kube_server.reviews.allow(
        user=READER, verb="list", group="kueue.x-k8s.io", resource="workloads"
    )
    files = tmp_path_factory.mktemp("not-running")
    namespace = f"stuck-{uuid.uuid4().hex[:6]}"
    with ExitStack() as stack:
        stack.callback(_clean_up, kube_server, live_metrics, namespace)
        kueue = seed(kube_server, namespace)
        stops = Stops(kube_server, namespace)
        stack.callback(stops.unsubscribe)
        api_port = free_port()
        kubeconfig = write_kubeconfig(files / "kubeconfig", kube_server, token=f"serve-{namespace}")
        settings = config(
            namespace,
            kubeconfig=kubeconfig,
            prometheus=live_metrics.prometheus.url,
            api_port=api_port,
        )
        serve = stack.enter_context(
            ServeProcess(write_config(files / "config.yaml", settings), log=files / "log")
        )
        api = f"http://127.0.0.1:{api_port}"
        story = play(kube_server, live_metrics, kueue, stops, api=api, namespace=namespace)
        story.kueue_source = f"{namespace}-kueue/kueue-manager-config"
        story.serve_log = tuple(serve.messages())
        yield story
        assert serve.running


def seed(server: KubeServer, namespace: str) -> ClusterEmulator:
    server.store.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    seed_queues(server, cluster_queue=f"cq-{namespace}", namespaces=[namespace], gpus=3)
    kueue = ClusterEmulator(server, clock=lambda: datetime.now(UTC), namespaces=[namespace])
    kueue.unpullable |= {BAD_IMAGE, LATE_IMAGE}
    kueue.pods_ready_for.add("timed")
    server.store.put(kueue_configuration(f"{namespace}-kueue"))
    for name in ("broken", "late", "timed", "waiter"):  # Kueue admits them in this order
        rc = make_raycluster(namespace, name).head(gpus=1).image(IMAGES[name])
        submit(server, rc.queue("user-queue").build())
    kueue.sync()
    return kueue


def kueue_configuration(namespace: str) -> dict[str, Any]:
    """Kueue's manager ConfigMap as its manifests ship it (config/components/manager), with
    the admin's timeout."""
    text = (
        "apiVersion: config.kueue.x-k8s.io/v1beta2\n"
        "kind: Configuration\n"
        f"waitForPodsReady:\n  timeout: {KUEUE_TIMEOUT}\n"
    )
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": namespace, "name": "kueue-manager-config"},
        "data": {"controller_manager_config.yaml": text},
    }


def play(
    server: KubeServer,
    live: LiveMetrics,
    kueue: ClusterEmulator,
    stops: Stops,
    *,
    api: str,
    namespace: str,
) -> Story:
    def synced_rows() -> dict[str, dict[str, Any]]:
        kueue.sync()
        return rows(api, namespace)

    seen = poll(
        lambda: (
            (found := synced_rows())
            and all(found.get(n, {}).get("state") == "not-running" for n in ("broken", "late"))
            and found
        ),
        within=30,
        what="broken and late not running",
    )
    kueue.unpullable.discard(LATE_IMAGE)  # published at last, well within the limit
    kueue.sync()
    for gpu in gpus_of(server, namespace, "late"):
        live.exporter.set(gpu, utilization=85)

    def warned() -> dict[str, str] | None:
        kueue.sync()
        annotations = workload_of(server, namespace, "broken")["metadata"].get("annotations")
        return annotations if annotations and keys.WARNED_AT in annotations else None

    broken_warned = poll(warned, within=NOT_RUNNING_AFTER_S + 20, what="broken warned")
    event = poll(lambda: _warning_event(server, namespace), within=10, what="its Event")

    def waiter_admitted() -> bool:
        kueue.sync()
        return "broken" in stops.at and _admitted(workload_of(server, namespace, "waiter"))

    poll(waiter_admitted, within=WARN_BEFORE_S + 20, what="broken stopped, waiter admitted")
    metrics = httpx.get(f"{api}/metrics", timeout=5).text
    return Story(
        seen_not_running=seen,
        broken_warned=broken_warned,
        warning_event=event,
        stopped=dict(stops.at),
        waiter_admitted=_admitted(workload_of(server, namespace, "waiter")),
        waiter_running=_pods_running(server, namespace, "waiter"),
        late_running=_pods_running(server, namespace, "late"),
        late_annotations=dict(
            workload_of(server, namespace, "late")["metadata"].get("annotations") or {}
        ),
        timed_row=rows(api, namespace)["timed"],
        timed_annotations=dict(
            workload_of(server, namespace, "timed")["metadata"].get("annotations") or {}
        ),
        metrics=metrics,
    )


def _admitted(workload: dict[str, Any]) -> bool:
    conditions = (workload.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions)


def _pods_running(server: KubeServer, namespace: str, name: str) -> bool:
    pods = server.store.list("pods", namespace=namespace, label_selector=f"ray.io/cluster={name}")
    return bool(pods) and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def _warning_event(server: KubeServer, namespace: str) -> dict[str, Any] | None:
    name = workload_of(server, namespace, "broken")["metadata"]["name"]
    found = [
        e
        for e in server.store.list("events", namespace=namespace)
        if e["involvedObject"]["name"] == name and "image" in e.get("message", "")
    ]
    return found[0] if found else None


def _clean_up(server: KubeServer, live: LiveMetrics, namespace: str) -> None:
    with suppress(ApiError, AssertionError):
        for gpu in gpus_of(server, namespace, "late"):
            live.exporter.remove(gpu)
    for owned in (namespace, f"{namespace}-svc", f"{namespace}-kueue"):
        server.store.delete_namespace(owned)
    with suppress(ApiError):
        server.store.delete("namespaces", name=namespace)
        server.store.delete("clusterqueues.kueue.x-k8s.io", name=f"cq-{namespace}")


def test_workloads_whose_gpu_pods_never_ran_are_not_running_with_the_pods_reason(
    story: Story,
) -> None:
    broken = story.seen_not_running["broken"]
    assert broken["state"] == "not-running"
    assert f"image {BAD_IMAGE} cannot be pulled (ImagePullBackOff)" in broken["reason"]
    assert f"image {LATE_IMAGE} cannot be pulled" in story.seen_not_running["late"]["reason"]
    assert story.seen_not_running["waiter"]["state"] == "pending", story.seen_not_running["waiter"]


def test_the_stuck_one_is_warned_naming_the_image_then_stopped_and_the_waiter_admitted(
    story: Story,
) -> None:
    assert keys.STOP_PLANNED_AT in story.broken_warned
    message = story.warning_event["message"]
    assert message.startswith("GPUs held, not running: stop planned at "), message
    assert f" — image {BAD_IMAGE} cannot be pulled (ImagePullBackOff) for " in message
    assert "Idle GPUs" not in message
    assert set(story.stopped) == {"broken"}
    assert story.waiter_admitted and story.waiter_running


def test_one_that_started_late_but_within_the_limit_is_left_alone(story: Story) -> None:
    assert story.late_running
    assert keys.WARNED_AT not in story.late_annotations
    assert "late" not in story.stopped


def test_one_kueue_times_out_itself_is_reported_with_kueues_deadline_and_left_to_kueue(
    story: Story,
) -> None:
    row = story.timed_row
    assert (row["state"], row["action"]) == ("not-running", "none")
    assert "Kueue's waitForPodsReady is in charge" in row["reason"]
    # the deadline from the timeout Kueue's Configuration sets, read from its ConfigMap
    assert f"with its {KUEUE_TIMEOUT} timeout (counted from " in row["reason"]
    assert story.kueue_source in row["reason"]
    assert "left to Kueue" in row["reason"]
    assert row.get("timeLeftSeconds") is None
    assert keys.WARNED_AT not in story.timed_annotations
    assert "timed" not in story.stopped


def test_metrics_count_the_class(story: Story) -> None:
    """`timed` stays not-running (left to Kueue) whatever else the last cycle saw."""
    prefix = 'idle_gpu_autoscaler_workloads{state="not-running"} '
    [line] = [line for line in story.metrics.splitlines() if line.startswith(prefix)]
    assert float(line.removeprefix(prefix)) >= 1


def test_the_start_up_log_says_kueues_configuration_in_one_line(story: Story) -> None:
    said = [m for m in story.serve_log if m.startswith("Kueue configuration ")]
    assert said == [f"Kueue configuration {story.kueue_source}: waitForPodsReady on, timeout 10m"]
