"""Ray's own metrics as evidence, read from a real Prometheus backfilled with Ray's series.

The series are shaped as Ray exports them and a KubeRay PodMonitor scrapes them (see
tests/support/ray_metrics.py and the sources cited in autoscaler/adapters/prometheus/ray.py):
`ray_tasks` by State (RUNNING while a task executes; FINISHED a count that grows), `ray_actors`
ALIVE from the head's GCS, `ray_running_jobs` for attached drivers. Only task execution is use;
actors and drivers are shown. One namespace per case; the history ends six hours before the
test so that it sits in backfilled blocks, away from live data.

This module runs its own Prometheus: the session's one is backfilled with dcgm-exporter
histories only (tests/support/prom_histories.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from autoscaler.adapters.prometheus.promql import QueryWindow
from autoscaler.adapters.prometheus.ray import RayReader
from autoscaler.domain.usage.evidence import NO_EVIDENCE, FleetEvidence, Signal
from autoscaler.settings.evidence import RaySettings
from tests.support.prom import PrometheusServer, require_binaries
from tests.support.ray_metrics import (
    RayPod,
    RaySeries,
    actors,
    backfill_ray,
    between,
    constant,
    rising,
    running_jobs,
    tasks,
)

pytestmark = pytest.mark.real

M, H = 60, 3600
SPAN = QueryWindow(
    window=timedelta(minutes=30),
    slot=timedelta(minutes=1),
    lookback=timedelta(hours=6),
    threshold=0.05,
)  # (reach: 30 min + one 15-min coarse step)


def pod(namespace: str, name: str, *, node_type: str = "head", ip: str = "10.1.0.5") -> RayPod:
    return RayPod(namespace, name, cluster=f"{namespace}-rc", ip=ip, node_type=node_type)


NOTEBOOK = pod("notebook", "nb-rc-head-x7k2p")
TRAINING = pod("training", "train-rc-gpu-group-worker-4hq9z", node_type="worker", ip="10.1.0.6")
BATCH = pod("batch", "batch-rc-head-m2v8d", ip="10.1.0.7")
LONG_AGO = pod("long-ago", "old-rc-head-q1w2e", ip="10.1.0.8")
FRESH = pod("fresh", "fresh-rc-head-z9y8x", ip="10.1.0.9")
SERVE = pod("serve", "serve-rc-head-c3d4f", ip="10.1.0.10")
DROPPED = pod("dropped", "drop-rc-gpu-group-worker-p0o9i", node_type="worker", ip="10.1.0.11")
MIXED = pod("mixed", "mixed-rc-gpu-group-worker-u7y6t", node_type="worker", ip="10.1.0.12")


def history(end: int) -> list[RaySeries]:
    return [
        # An idle notebook: its driver attached, two actors alive since their creation
        # finished long ago, no task running (Ray keeps the RUNNING series at 0).
        running_jobs(NOTEBOOK, constant(1)),
        actors(NOTEBOOK, constant(2)),
        tasks(NOTEBOOK, "FINISHED", constant(2), name="Counter.__init__"),
        tasks(NOTEBOOK, "RUNNING", constant(0), name="Counter.increment"),
        # Training: three tasks executing on a worker for the last twenty minutes.
        tasks(TRAINING, "RUNNING", between(end - 20 * M, end, 3)),
        # Batch: short tasks, one finished every 30 s from 40 to 10 minutes before the end,
        # never caught RUNNING by a scrape.
        tasks(BATCH, "RUNNING", constant(0)),
        tasks(BATCH, "FINISHED", rising(end - 40 * M, end - 10 * M, base=100, every_s=30)),
        # Long ago: tasks finished between 120 and 100 minutes before the end, beyond reach.
        tasks(LONG_AGO, "FINISHED", rising(end - 120 * M, end - 100 * M, base=0, every_s=10)),
        # Fresh: a new driver's count, born five minutes before the end.
        tasks(FRESH, "FINISHED", rising(end - 5 * M, end, base=5, every_s=15, born=True)),
        # Serve: a control loop that runs forever (ignored when configured so).
        tasks(SERVE, "RUNNING", constant(1), name="ServeController.run_control_loop"),
        # Dropped: a worker process that kept part of the count died (ray-project/ray#45333).
        tasks(DROPPED, "FINISHED", between(end - 3 * H, end - 20 * M, 50, otherwise=10)),
        # Mixed: the same drop, and beside it two tasks of another name finishing in that slot.
        tasks(MIXED, "FINISHED", between(end - 3 * H, end - 20 * M, 50, otherwise=10)),
        tasks(MIXED, "FINISHED", rising(end - 20 * M, end - 19 * M, base=0, every_s=30), name="b"),
    ]


@dataclass(frozen=True)
class RayRig:
    prometheus: PrometheusServer
    end: datetime  # where the history ends; reads are made at it

    def ask(self, promql: str, at: datetime) -> Sequence[Mapping[str, Any]]:
        return self.prometheus.query(promql, at=at.timestamp())

    def read(
        self, settings: RaySettings | None = None, *, now: datetime | None = None
    ) -> FleetEvidence:
        reader = RayReader(settings or RaySettings())
        return reader.read(self.ask, span=SPAN, now=now or self.end)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayRig]:
    binaries = require_binaries()
    end = (int(time.time()) - 6 * H) // 60 * 60
    server = PrometheusServer(tmp_path_factory.mktemp("ray-prometheus"), binaries=binaries)
    backfill_ray(
        history(end), server.data_dir, promtool=binaries.promtool, start=end - 3 * H, end=end
    )
    server.start(wait_for_targets=False)
    try:
        yield RayRig(server, datetime.fromtimestamp(end, UTC))
    finally:
        server.stop()


def test_an_idle_notebook_with_its_driver_attached_and_actors_alive_is_shown_never_used(
    rig: RayRig,
) -> None:
    evidence = rig.read()
    assert evidence.for_pod("notebook", NOTEBOOK.pod) == ()
    assert evidence.notes_for("notebook", NOTEBOOK.pod) == ("2 actors alive", "driver attached")


def test_tasks_executing_are_a_sighting_from_their_first_slot_to_the_newest(rig: RayRig) -> None:
    (sighting,) = rig.read().for_pod("training", TRAINING.pod)
    assert sighting.signal is Signal.RAY and sighting.signal.means_use
    assert sighting.first_at == rig.end - timedelta(minutes=20)
    assert sighting.last_at == rig.end
    assert sighting.detail == "Ray tasks: 0 finished, 3 running now"
    assert not sighting.device_level


def test_a_rising_finished_count_is_use_even_when_no_scrape_saw_a_task_running(
    rig: RayRig,
) -> None:
    (sighting,) = rig.read().for_pod("batch", BATCH.pod)
    assert sighting.first_at == rig.end - timedelta(minutes=39)
    assert sighting.last_at == rig.end - timedelta(minutes=10)
    assert sighting.detail == "Ray tasks: 60 finished, 0 running now"


def test_a_finished_count_that_rose_beyond_the_reach_and_stayed_flat_is_no_evidence(
    rig: RayRig,
) -> None:
    evidence = rig.read()
    assert evidence.for_pod("long-ago", LONG_AGO.pod) == ()
    assert evidence.notes_for("long-ago", LONG_AGO.pod) == ()


def test_a_finished_count_that_drops_is_no_evidence(rig: RayRig) -> None:
    assert rig.read().for_pod("dropped", DROPPED.pod) == ()


def test_a_drop_hides_no_rise_beside_it_in_the_same_slot(rig: RayRig) -> None:
    (sighting,) = rig.read().for_pod("mixed", MIXED.pod)
    assert sighting.first_at == sighting.last_at == rig.end - timedelta(minutes=19)
    assert sighting.detail == "Ray tasks: 2 finished, 0 running now"


def test_a_count_born_within_the_reach_counts_whole_from_its_first_slot(rig: RayRig) -> None:
    (sighting,) = rig.read().for_pod("fresh", FRESH.pod)
    assert sighting.first_at == rig.end - timedelta(minutes=5)
    assert sighting.detail == "Ray tasks: 25 finished, 0 running now"


def test_ignored_task_names_never_count_as_use(rig: RayRig) -> None:
    assert rig.read().for_pod("serve", SERVE.pod) != ()
    quiet = RaySettings(ignored_task_names="ServeController\\..*")
    assert quiet.ignored_task_names
    assert rig.read(quiet).for_pod("serve", SERVE.pod) == ()


def test_the_pods_are_the_ray_pods_that_exported_the_series(rig: RayRig) -> None:
    evidence = rig.read()
    assert set(evidence.pods) == {
        ("training", TRAINING.pod),
        ("batch", BATCH.pod),
        ("fresh", FRESH.pod),
        ("serve", SERVE.pod),
        ("mixed", MIXED.pod),
    }
    assert set(evidence.notes) == {("notebook", NOTEBOOK.pod)}
    assert evidence.failures == {}


def test_a_driver_that_detached_before_the_newest_slot_is_not_shown(rig: RayRig) -> None:
    after_the_history = rig.end + timedelta(minutes=10)  # past Prometheus' 5 min lookback
    assert rig.read(now=after_the_history).notes == {}


def test_no_ray_series_is_empty_evidence_not_a_failure(rig: RayRig) -> None:
    before_the_history = rig.end - timedelta(hours=5)
    assert rig.read(now=before_the_history) == NO_EVIDENCE


def test_one_query_reads_the_whole_fleet(rig: RayRig) -> None:
    sent: list[str] = []

    def counting(promql: str, at: datetime) -> Sequence[Mapping[str, Any]]:
        sent.append(promql)
        return rig.ask(promql, at)

    RayReader(RaySettings()).read(counting, span=SPAN, now=rig.end)
    assert len(sent) == 1


def test_a_query_prometheus_refuses_raises(rig: RayRig) -> None:
    # Settings refuse such a name at load time; built unchecked, the reader still must raise.
    broken = RaySettings.model_construct(**{**dict(RaySettings()), "tasks_metric": "ray_tasks{"})
    with pytest.raises(RuntimeError, match="parse error"):
        rig.read(broken)
