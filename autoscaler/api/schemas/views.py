"""What the API answers with. camelCase on the wire; times are RFC 3339 UTC."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ConfigDict, Field

from autoscaler.api.schemas.base import View
from autoscaler.api.schemas.stopped import StoppedView
from autoscaler.api.schemas.words import MANAGER_WORDS, STATE_WORDS
from autoscaler.domain.models import Action, State
from autoscaler.domain.policy.management import DEFAULT_MANAGER, Manager
from autoscaler.domain.policy.owner_words import REQUEUE_WORDS


class OwnerView(View):
    api_version: str = Field(examples=["ray.io/v1"])
    kind: str = Field(examples=["RayCluster"])
    name: str = Field(examples=["my-workspace-cluster"])
    display: str = Field(
        description="The owner as people know it: `<kind> <namespace>/<name>`.",
        examples=["RayCluster team-a/my-workspace-cluster"],
    )


class ExemptionView(View):
    until: datetime | None = Field(description="End of the exemption; null when indefinite.")
    indefinite: bool
    on_owner: bool = Field(description="Set on the owner (true) or on the Workload itself.")
    by: str | None = Field(None, examples=["alice"])
    reason: str | None = Field(None, examples=["presenting the demo"])
    set_at: datetime | None = None
    requested_until: str | None = Field(
        None, description="The original end when the service cut it to the maximum."
    )


def _absent(value: object) -> bool:
    return value is None


def _omitted(default: None = None, **kwargs: Any) -> Any:
    """A field left out of the answer when it has no value (not sent as null)."""
    return Field(default, exclude_if=_absent, **kwargs)


class NoticeView(View):
    """A workload's warning, snooze and planned stop, read back from its annotations. Only
    the times it has are sent."""

    warned_at: datetime | None = _omitted(description="When the warning in force was given.")
    stop_at: datetime | None = _omitted(
        description="The planned stop's earliest time; a snooze pushes it back."
    )
    snoozed_until: datetime | None = _omitted(description="Kept (not stopped) until then.")
    snoozed_by: str | None = _omitted(
        description="Who snoozed it: a user, or `link:` and the notification target whose "
        "Keep link was followed.",
        examples=["alice", "link:ml-slack"],
    )
    delete_at: datetime | None = _omitted(
        description="Rule action `delete`: the deletion's earliest time."
    )


class ViaKueueView(View):
    """Rule `reclaim: via-kueue` (docs/RECLAIM.md) for this workload: our mark for Kueue's
    preemption, and whether Kueue serves the priority boost it rests on."""

    marked: bool = Field(description="Our priority boost is on its Workload.")
    since: datetime | None = Field(None, description="When we marked it; null: not marked.")
    gate: str = Field(
        description="Kueue's PriorityBoost feature gate, as its Configuration says: on, off or "
        "unknown (the rule does nothing unless on).",
        examples=["on"],
    )
    gate_line: str = Field(
        description="Where the gate was read and what it says.",
        examples=[
            "Kueue feature gate PriorityBoost (alpha since v0.17, default false): on in "
            "kueue-system/kueue-manager-config"
        ],
    )
    reason: str = Field(examples=["Marked for Kueue's preemption since 2030-01-01T10:00:00Z"])


class WorkloadView(View):
    """A workload as the latest cycle saw it, with that cycle's decision."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "namespace": "team-a",
                    "name": "raycluster-my-workspace-cluster-1a2b3",
                    "manager": "kueue",
                    "queue": "user-queue",
                    "clusterQueue": "cluster-queue",
                    "owner": {
                        "apiVersion": "ray.io/v1",
                        "kind": "RayCluster",
                        "name": "my-workspace-cluster",
                        "display": "RayCluster team-a/my-workspace-cluster",
                    },
                    "active": True,
                    "admitted": True,
                    "priorityClass": None,
                    "gpus": 2,
                    "state": "idle",
                    "action": "none",
                    "reason": "every GPU at or below 5% for 42m",
                    "evidence": ["ray: driver attached (shown, not use)"],
                    "idleHeldGpus": 0,
                    "peakUtilization": 0.01,
                    "coverage": 1.0,
                    "idleSince": "2030-01-01T10:00:00Z",
                    "timeLeftSeconds": 1080.0,
                    "exemption": None,
                    "deactivatedAt": None,
                    "reactivatedAt": None,
                    "stopMeans": "suspended: KubeRay deletes its pods; Kueue keeps it queued "
                    "for later",
                    "bringBack": "reactivate its Workload: Kueue admits it again when quota is "
                    "free and KubeRay recreates its pods",
                    "stopLasts": True,
                }
            ]
        }
    )

    namespace: str
    name: str = Field(description="The Workload's name (the RayCluster's, unless `kueue`).")
    manager: Manager = Field(DEFAULT_MANAGER, description=MANAGER_WORDS)
    queue: str
    cluster_queue: str | None
    owner: OwnerView | None
    active: bool = Field(description="False once deactivated (or a RayCluster suspended).")
    admitted: bool
    priority_class: str | None
    gpus: int = Field(description="GPUs held by the workload's running pods.")
    state: State = Field(description=STATE_WORDS)
    action: Action
    reason: str
    evidence: list[str] = Field(
        default_factory=list,
        description="What the evidence signals (framebuffer, power, PCIe, NVLink, Ray) saw, "
        "one line each; empty when none saw anything (absence is no evidence either way).",
        examples=[["framebuffer rose 18.0 GiB", "pcie receiving 2.1 GB/s"]],
    )
    idle_held_gpus: int = Field(
        0, description="For `idle-held`: how many of `gpus` sat idle the whole window."
    )
    running_unmonitored: bool = Field(
        False,
        description="Its GPU pods run, as Kubernetes says, but the GPU metrics miss some of "
        "its GPUs: `unknown` until an admin fixes the monitoring gap (never stopped).",
    )
    peak_utilization: float | None = Field(description="Highest GPU utilization, 0..1.")
    coverage: float | None = Field(description="Share of the idle window with samples, 0..1.")
    idle_since: datetime | None
    time_left_seconds: float | None = Field(
        description="Seconds until the idle window completes; null when not idling."
    )
    exemption: ExemptionView | None
    deactivated_at: datetime | None
    reactivated_at: datetime | None
    notice: NoticeView | None = _omitted(
        description="The planned stop, warning and snooze; omitted when there are none."
    )
    stop_means: str = Field(
        "",
        description="What a stop means for it, in its owner kind's words (the manager's where "
        "the kind is not known); for a stop that is a requeue (`stopLasts` false) they begin "
        f'"{REQUEUE_WORDS}".',
    )
    bring_back: str = Field("", description="How a stopped one comes back.")
    via_kueue: ViaKueueView | None = _omitted(
        description="Rule `reclaim: via-kueue`: its mark and Kueue's gate; omitted under "
        "another rule when it carries no mark of ours."
    )
    stop_lasts: bool = Field(
        True,
        description="False where a stop is a requeue (Kueue's pod integration): its pods are "
        "deleted and come back as a new Workload that queues again, behind the waiters.",
    )
    stopped: StoppedView | None = _omitted(
        description="A stopped workload (`active` false): when, by which rule or person, for "
        "which waiter, on what evidence, and the command that brings it back; read from the "
        "stop's annotations. Omitted while it is active."
    )


class SnapshotView(View):
    cycle: int
    taken_at: datetime
    cluster_ok: bool = Field(description="The cycle read the cluster.")
    metrics_ok: bool = Field(description="The cycle read Prometheus.")
    dry_run: bool
    errors: list[str]


class WorkloadList(View):
    snapshot: SnapshotView | None = Field(description="Null until the first cycle ends.")
    items: list[WorkloadView]
    running_unmonitored: list[str] | None = _omitted(
        description="The listed workloads whose GPU pods run but which the GPU metrics miss "
        '("running but not monitored"), as namespace/name: a monitoring gap to fix. Omitted '
        "when there is none.",
        examples=[["team-a/raycluster-demo-1a2b3"]],
    )


class ExemptionResult(View):
    namespace: str
    workload: str
    annotated: str = Field(
        description="The object that now carries the annotations.",
        examples=["RayCluster team-a/my-workspace-cluster"],
    )
    exemption: ExemptionView | None = Field(description="Null after removal.")


class SnoozeResult(View):
    """A snooze granted (or, after DELETE, removed)."""

    namespace: str
    workload: str
    until: datetime | None = Field(description="No stop before then; null after removal.")
    clipped_from: datetime | None = Field(
        None, description="The end asked for, when the rule's longest snooze cut it."
    )
    rule: str = Field(description="The rule whose bounds applied.", examples=["default"])
    by: str = Field(examples=["alice"])
    reason: str | None = None


class ChangeResult(View):
    """A change made on a workload."""

    namespace: str
    workload: str
    action: str = Field(examples=["reactivate"])
    by: str
    reason: str
    at: datetime


class PauseView(View):
    scope: str = Field(description="`service` or a namespace name.", examples=["team-a"])
    by: str | None = None
    reason: str | None = None
    at: datetime | None = None


class PausesView(View):
    service_paused: bool
    paused: list[PauseView] = Field(description="Every pause in force, the service's first.")


class AuditView(View):
    at: datetime
    actor: str = Field(examples=["alice"])
    action: str = Field(examples=["deactivate"])
    target: str = Field(examples=["team-a/raycluster-my-workspace-cluster-1a2b3"])
    reason: str
    outcome: str = Field(examples=["done"])
    namespace: str | None = None
    owner: str | None = Field(
        None,
        description="The loop's records: the workload's owner as people know it "
        "(`<kind> <namespace>/<name>`); null when the record names none.",
        examples=["RayCluster team-a/my-workspace-cluster"],
    )
    gpus: int | None = None
    peak: float | None = Field(None, description="Observed peak utilization, 0..1.")
    coverage: float | None = None
    threshold: float | None = Field(None, description="The idle threshold in force, 0..1.")
    evidence: str | None = Field(
        None,
        description="The loop's records: what the evidence signals saw when it decided, on "
        "one line; null when nothing was seen.",
        examples=["ray: driver attached (shown, not use)"],
    )


class AuditPage(View):
    items: list[AuditView] = Field(description="Newest first.")
    total: int
    offset: int
    limit: int
    next_offset: int | None = Field(description="Offset of the next page; null on the last.")


class Health(View):
    status: str = Field(examples=["ok"])


class BreakerView(View):
    """The mass-idle circuit breaker: while open, nothing is deactivated. Its `reason` names a
    few of the workloads that turned idle only for admins; anyone else gets the counts."""

    open: bool
    since: datetime | None = Field(None, description="When it opened.")
    reason: str | None = Field(None, examples=["6 of 20 workloads busy last cycle turned idle"])
    normal_cycles: int = Field(0, description="Consecutive normal cycles since it opened.")
    close_after: int | None = Field(None, description="Normal cycles that close it.")


class GuardsView(View):
    """What the guards held back in the last cycle."""

    breaker: BreakerView
    hourly_limit: int = Field(description="Most deactivations by the loop in any hour.")
    deactivations_last_hour: int = Field(description="Begun by the loop in the last hour.")
    deferred: int = Field(description="Held back this cycle by the breaker or the hourly cap.")
    contested_count: int = Field(
        description="Workloads left alone because something keeps setting them back to "
        "active: a count, since /readyz answers anyone. Their rows' reasons begin "
        "`contested:`; an admin clears each with DELETE .../contested.",
    )
    problems: list[str] = Field(default_factory=list)


class Readiness(View):
    ready: bool
    cycle: int | None = None
    taken_at: datetime | None = None
    cluster_ok: bool | None = Field(None, description="The last cycle reached the cluster.")
    metrics_ok: bool | None = Field(None, description="The last cycle reached Prometheus.")
    errors: list[str] = Field(default_factory=list)
    guards: GuardsView | None = Field(
        None, description="The guards' state (an open breaker does not fail readiness)."
    )


class MissView(View):
    rule: str = Field(examples=["production"])
    why: str = Field(examples=["namespace team-a is not one of [prod]"])


class WaitersJudgedView(View):
    """The latest cycle's judgement of the Workloads waiting for quota (read only when a
    `when-contended` stop was due): counts, and why fits were unknown, by class."""

    judged: int = Field(description="Waiters judged this cycle.")
    outcomes: dict[str, int] = Field(examples=[{"served": 1, "fit unknown": 2}])
    fit_unknown: dict[str, int] = Field(
        description="Waiters whose fit was unknown, by reason: queues-unread, queue-unknown, "
        "queue-unmodelled, order-unknown.",
        examples=[{"order-unknown": 2}],
    )
    failure: str | None = Field(None, description="Who waits could not be read: frees nothing.")
    judgement: str | None = Field(
        None,
        description="For this workload: the waiter it is freed for, and why it lets it in.",
        examples=["team-b/train (team-b-cq) served: first by fair sharing (share 0) ..."],
    )


class OwnerKindView(View):
    """The owner's kind as this service treats it (`cluster.ownerKinds`)."""

    kind: str = Field(examples=["PyTorchJob"])
    known: bool = Field(description="In the service's table of owner kinds.")
    enabled: bool | None = Field(
        description="Acted on by this service's settings; null when no rules are loaded."
    )
    opt_in: bool = Field(
        description="Off unless enabled: the batch kinds, whose stop restarts the job."
    )


class ExplainView(View):
    """The rule a workload falls under (first match wins) and the decision it led to."""

    workload: WorkloadView
    rule: str = Field(description="The matched rule, or the one that could not be evaluated.")
    matched: bool = Field(description="False: `rule` could not be evaluated; no action.")
    unknown: str | None = Field(None, description="Why `rule` could not be evaluated.")
    gpu_models: list[str] = Field(default_factory=list, description="As read this cycle.")
    misses: list[MissView] = Field(description="Each earlier rule, and why it did not match.")
    waiters: WaitersJudgedView | None = Field(
        None, description="null: no when-contended stop was due this cycle, nobody judged."
    )
    owner_kind: OwnerKindView | None = Field(
        None, description="The owner's kind and whether it is acted on; null without an owner."
    )
