"""Ray's own metrics as evidence (ISSUE 16): tasks executing in a Ray cluster's pods are use;
live actors and an attached driver are shown, never use (an idle notebook keeps both).

One fleet-wide query per cycle, a subquery matrix over `span.evidence_reach` at `span.slot` (like
`promql.SLOTS`), evaluated at the slot end after `now`. Its four parts, each summed per
(namespace, pod) of the Ray pod that exported the series and tagged with `ray_part` so that
`or` brings them back in one answer:

- `running`: the slot's highest count of tasks in an executing state;
- `finished`: how many tasks finished in the slot (the count's rise per series; a series born
  in the slot counts whole);
- `actors`, `drivers`: live actors and running jobs (drivers), shown only.

The series shapes, and where they come from:

- `ray_tasks` is a gauge by `State`, `Name`, `Source`, `IsRetry` and `JobId` (Ray's System
  Metrics reference, docs.ray.io/en/latest/ray-observability/reference/system-metrics.html;
  the tag keys in ray-project/ray src/ray/core_worker/metrics.h). Several processes record a
  task's moves between states as +1/-1 points, so only sums are meaningful (the same page,
  "Metrics Semantics and Consistency"; ray-project/ray#28459). Executing states are RUNNING,
  RUNNING_IN_RAY_GET and RUNNING_IN_RAY_WAIT (rpc::TaskState; ray-project/ray#48528 plots
  "running tasks" from exactly these).
- FINISHED is a count that only grows while the process that keeps it lives, and drops when
  its node dies (ray-project/ray#45333: Ray's own dashboard works around it with
  max_over_time; ray-project/ray#47522: the task metrics are gauges, not counters). So a rise
  within a slot is use and a drop is not; short tasks that finish between two scrapes show
  only here, never as RUNNING.
- `ray_actors` by `State`: since ray-project/ray#45718 the GCS (on the head) emits ALIVE for
  every live actor and each actor's worker its sub-state (IDLE, RUNNING_TASK, ...), so ALIVE
  alone counts live actors once; an actor's running method shows in `ray_tasks` anyway.
- `ray_running_jobs` (no labels of its own) is the GCS's "Number of jobs currently running"
  (ray-project/ray src/ray/gcs/metrics.h; asked for in ray-project/ray#47438 to spot clusters
  left alive): each attached driver is a running job, a notebook's `ray.init()` included.
- KubeRay clusters are scraped by a PodMonitor per node type (kuberay config/prometheus/
  podMonitor.yaml; docs.ray.io .../kubernetes/k8s-ecosystem/prometheus-grafana.html): the
  Prometheus Operator attaches the Ray pod's `namespace`, `pod`, `container`, `endpoint`,
  `instance` and `job`, and the monitor's relabeling adds `ray_io_cluster`. Ray's metrics
  carry no namespace or pod of their own, so the pod is the exporter's.

A failed query raises what `ask` raises (the metric source records Ray as failed, making the
workloads with Ray pods unknown); no Ray series at all is empty evidence, not a failure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from autoscaler.adapters.prometheus.evidence_base import Ask
from autoscaler.adapters.prometheus.promql import (
    QueryWindow,
    after_reach_start,
    duration,
    parse_matrix,
    reach_start,
)
from autoscaler.adapters.prometheus.views import slots_end
from autoscaler.domain.text import counted
from autoscaler.domain.usage.evidence import FleetEvidence, Sighting, Signal
from autoscaler.settings.evidence import RaySettings

PART = "ray_part"  # our tag label: which part of the query a series answers
RUNNING, FINISHED, ACTORS, DRIVERS = "running", "finished", "actors", "drivers"

Pod = tuple[str, str]
Points = list[tuple[float, float]]


def ray_query(settings: RaySettings, *, span: QueryWindow) -> str:
    """The one query: every part per slot over the read's reach."""
    slot, slot_range = duration(span.slot), span.range(span.slot)  # range: (t - slot, t]
    by = f"sum by ({settings.namespace_label}, {settings.pod_label})"
    running = f"max_over_time({_tasks(settings, *settings.running_states)}[{slot_range}])"
    count = _tasks(settings, settings.finished_state)
    rise = f"clamp_min({count} - {count} offset {slot}, 0)"
    born = f"({count} unless {count} offset {slot})"  # a series new in the slot counts whole
    finished = f"{rise} or {born}"
    alive = (
        f'max_over_time({settings.actors_metric}{{State="{settings.alive_state}"}}[{slot_range}])'
    )
    drivers = f"max_over_time({settings.jobs_metric}[{slot_range}])"
    parts = {RUNNING: running, FINISHED: finished, ACTORS: alive, DRIVERS: drivers}
    tagged = " or ".join(
        f'label_replace({by} ({expr}), "{PART}", "{name}", "", "")' for name, expr in parts.items()
    )
    return f"({tagged})[{duration(span.evidence_reach)}:{slot}]"


def _tasks(settings: RaySettings, *states: str) -> str:
    matchers = [f'State=~"{"|".join(states)}"']
    if settings.ignored_task_names:
        matchers.append(f"Name!~{_quoted(settings.ignored_task_names)}")
    return f"{settings.tasks_metric}{{{','.join(matchers)}}}"


def _quoted(text: str) -> str:
    """A PromQL string literal of `text`: a regex's backslashes reach the regex unchanged."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


@dataclass
class _PodParts:
    """One pod's answer, part by part."""

    parts: dict[str, Points] = field(default_factory=dict)

    def points(self, part: str) -> Points:
        return self.parts.get(part, [])


class RayReader:
    """`EvidenceReader` of Ray's task, actor and job metrics."""

    signal = Signal.RAY

    def __init__(self, settings: RaySettings) -> None:
        self._settings = settings

    def read(self, ask: Ask, *, span: QueryWindow, now: datetime) -> FleetEvidence:
        at = slots_end(now, span.slot)
        result = ask(ray_query(self._settings, span=span), at)
        start = reach_start(at, span.evidence_reach)  # a step there: Prometheus 2.x only
        pods = _by_pod(result, self._settings, after=start)
        return _evidence_of(pods, newest=at, slot=span.slot)


def _by_pod(
    result: Sequence[Mapping[str, Any]], settings: RaySettings, *, after: float
) -> dict[Pod, _PodParts]:
    """The matrix grouped per pod; series that name no pod (scraped without the pod's target
    labels) cannot be tied to a workload and are left out."""
    pods: dict[Pod, _PodParts] = {}
    for labels, points in parse_matrix(result):
        namespace, pod = labels.get(settings.namespace_label), labels.get(settings.pod_label)
        if not namespace or not pod:
            continue
        real = [(at, v) for at, v in after_reach_start(points, after) if not math.isnan(v)]
        pods.setdefault((namespace, pod), _PodParts()).parts[labels.get(PART, "")] = real
    return pods


def _evidence_of(
    pods: Mapping[Pod, _PodParts], *, newest: datetime, slot: timedelta
) -> FleetEvidence:
    """Sightings where tasks ran or finished; notes of what is merely alive or attached now."""
    sightings: dict[Pod, tuple[Sighting, ...]] = {}
    notes: dict[Pod, tuple[str, ...]] = {}
    for pod, answer in sorted(pods.items()):
        found = _sighting(answer, newest=newest, slot=slot)
        if found is not None:
            sightings[pod] = (found,)
        said = _notes(answer, newest=newest, slot=slot)
        if said:
            notes[pod] = said
    return FleetEvidence(pods=sightings, notes=notes)


def _sighting(answer: _PodParts, *, newest: datetime, slot: timedelta) -> Sighting | None:
    active = [at for part in (RUNNING, FINISHED) for at, value in answer.points(part) if value > 0]
    if not active:
        return None
    finished = round(sum(value for _, value in answer.points(FINISHED) if value > 0))
    running = round(_now(answer.points(RUNNING), newest=newest, slot=slot))
    return Sighting(
        Signal.RAY,
        last_at=_time(max(active)),
        first_at=_time(min(active)),
        detail=f"Ray tasks: {finished} finished, {running} running now",
    )


def _notes(answer: _PodParts, *, newest: datetime, slot: timedelta) -> tuple[str, ...]:
    actors = round(_now(answer.points(ACTORS), newest=newest, slot=slot))
    drivers = round(_now(answer.points(DRIVERS), newest=newest, slot=slot))
    said = []
    if actors > 0:
        said.append(f"{counted(actors, 'actor')} alive")
    if drivers == 1:
        said.append("driver attached")
    elif drivers > 1:
        said.append(f"{drivers} drivers attached")
    return tuple(said)


def _now(points: Points, *, newest: datetime, slot: timedelta) -> float:
    """The value in the newest slot; 0 when the series did not reach it (gone, detached)."""
    if not points:
        return 0.0
    at, value = points[-1]
    return value if at > (newest - slot).timestamp() else 0.0


def _time(unix: float) -> datetime:
    return datetime.fromtimestamp(unix, UTC)
