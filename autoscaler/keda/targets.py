"""Judging a KEDA target from one snapshot: active, inactive, unknown, or not found.

Pure: the snapshot's own `taken_at` is "now", so an answer changes only when a cycle publishes.

- No running pods (scaled to zero, or deactivated) is INACTIVE, whatever an exemption or a
  pause says: a pause must never wake a target from zero.
- With running pods, an exempt, paused or in-grace target is ACTIVE, reported as 100 %.
- Otherwise usage decides: the verdict the loop's decision carries (a Workload asked about
  under its own rule), or `idleness.assess`, the policy's classifier, at another view (a
  named rule or legacy profile, a pod selector). Idle for the whole window is INACTIVE;
  anything else known (busy, loading, idle-held, idle for part of the window) is ACTIVE;
  missing, stale or partial data, or a failed evidence signal, is UNKNOWN, never inactive.

A reported value is above the profile's threshold exactly when the target is active, so a
metrics-api trigger with `activationTargetValue` = the threshold agrees with `IsActive`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from functools import cached_property

from autoscaler.domain.exemptions import active_exemption
from autoscaler.domain.models import (
    DEFAULT_PROFILE,
    FleetUsage,
    PodInfo,
    Snapshot,
    State,
    WorkloadInfo,
    WorkloadRef,
    WorkloadStatus,
)
from autoscaler.domain.policy.decisions import grace_end, not_before
from autoscaler.domain.policy.rules import Rule
from autoscaler.domain.usage.assessment import dated_clock
from autoscaler.domain.usage.idleness import Assessment, assess
from autoscaler.keda.selectors import Selector

METRIC_PREFIX = "gpu-peak-utilization"
FULL = 100.0  # what an exempt, paused or in-grace running target reports
_UNSAFE = re.compile(r"[^a-z0-9-]+")
_MAX_METRIC_NAME = 200  # KEDA prefixes "s<index>-"; HPA metric names are path segments


class Activity(StrEnum):
    ACTIVE = "active"
    INACTIVE = "inactive"
    UNKNOWN = "unknown"
    NOT_FOUND = "not-found"


@dataclass(frozen=True)
class Target:
    """What one trigger asks about: a Kueue Workload, or the GPU pods a selector matches."""

    namespace: str
    workload: str | None = None
    selector: Selector | None = None
    profile: str = DEFAULT_PROFILE

    def __str__(self) -> str:
        what = (
            f"{self.namespace}/{self.workload}"
            if self.workload
            else f"{self.namespace}[{self.selector}]"
        )
        return what if self.profile == DEFAULT_PROFILE else f"{what} (profile {self.profile})"

    @property
    def metric_name(self) -> str:
        """Stable, lowercase, path-safe; depends only on the metadata."""
        subject = self.workload if self.workload else f"sel-{_digest(str(self.selector))}"
        parts = [METRIC_PREFIX, self.namespace, subject]
        if self.profile != DEFAULT_PROFILE:
            parts.append(self.profile)
        name = _UNSAFE.sub("-", "-".join(parts).lower()).strip("-")
        if len(name) > _MAX_METRIC_NAME:
            name = f"{name[: _MAX_METRIC_NAME - 11]}-{_digest(name)}"
        return name


@dataclass(frozen=True)
class Judgement:
    activity: Activity
    value: float  # percent; only meaningful when active or inactive
    reason: str

    @property
    def known(self) -> bool:
        return self.activity in (Activity.ACTIVE, Activity.INACTIVE)


@dataclass(frozen=True)
class Judging:
    """The policy's rules, the default last: what a trigger's view (its profile) names."""

    rules: tuple[Rule, ...]

    @cached_property
    def _named(self) -> Mapping[str, Rule]:
        return {rule.name: rule for rule in self.rules}

    def under(self, view: str) -> Rule:
        """The rule a view names, so KEDA counts grace and loading as the loop does; a legacy
        profile's view is the default rule's numbers (window and threshold come with its read)."""
        return self._named.get(view, self.rules[-1])


def judge_workload(
    row: WorkloadStatus | None,
    usage: FleetUsage,
    *,
    snapshot: Snapshot,
    rule: Rule,
    verdict: Assessment | None = None,
) -> Judgement:
    """`verdict`: the one the row's decision carries, when `usage` is its own rule's view;
    None: judged here, at `usage`'s window and threshold."""
    if row is None:
        return Judgement(Activity.NOT_FOUND, 0.0, "no such Kueue Workload in the latest cycle")
    info, now = row.info, snapshot.taken_at
    if not info.active or not any(pod.phase_running for pod in info.pods):
        reason = "no running pods" if info.active else "deactivated (spec.active is false)"
        return Judgement(Activity.INACTIVE, 0.0, reason)
    exemption = active_exemption(info.annotations, info.owner_annotations, now=now)
    if exemption is not None:
        return Judgement(Activity.ACTIVE, FULL, f"exempt ({exemption.source})")
    held = _held(
        snapshot,
        namespace=info.ref.namespace,
        grace_end=grace_end(info, grace_period=rule.grace_period),
    )
    if held is not None:
        return held
    if not info.admitted:
        return Judgement(Activity.UNKNOWN, 0.0, "pods run but the Workload is not admitted")
    if verdict is None:
        verdict = _assessed(info, usage, rule=rule, not_before=not_before(info), now=now)
    return _by_verdict(verdict, usage)


def judge_pods(
    target: Target,
    pods: Sequence[PodInfo],
    usage: FleetUsage,
    *,
    snapshot: Snapshot,
    rule: Rule,
) -> Judgement:
    """The GPU pods a selector matched in the target's namespace, judged as one group."""
    running = [pod for pod in pods if pod.phase_running]
    if not running:
        return Judgement(Activity.INACTIVE, 0.0, "no running GPU pod matches the selector")
    newest = max(pod.created_at for pod in running)
    held = _held(snapshot, namespace=target.namespace, grace_end=newest + rule.grace_period)
    if held is not None:
        return held
    group = WorkloadInfo(
        ref=WorkloadRef(target.namespace, str(target.selector)),
        uid="",
        queue="",
        owner=None,
        active=True,
        admitted=True,
        admitted_at=None,
        created_at=min(pod.created_at for pod in running),
        expected_pods=len(running),
        pods=tuple(running),
    )
    verdict = _assessed(group, usage, rule=rule, not_before=newest, now=snapshot.taken_at)
    return _by_verdict(verdict, usage)


def _held(snapshot: Snapshot, *, namespace: str, grace_end: datetime | None) -> Judgement | None:
    """Paused or in grace: running pods stay up whatever the usage says."""
    if snapshot.pauses.covers(namespace):
        scope = "service" if snapshot.pauses.everything else f"namespace {namespace}"
        return Judgement(Activity.ACTIVE, FULL, f"paused ({scope})")
    if grace_end is not None and snapshot.taken_at < grace_end:
        until = dated_clock(grace_end, now=snapshot.taken_at)
        return Judgement(Activity.ACTIVE, FULL, f"in grace period until {until}")
    return None


def _assessed(
    info: WorkloadInfo,
    usage: FleetUsage,
    *,
    rule: Rule,
    not_before: datetime,
    now: datetime,
) -> Assessment:
    """The classifier at the view's own window and threshold (a legacy profile's differ)."""
    rules = replace(rule.usage, window=usage.window, threshold=usage.threshold)
    return assess(info, usage, rules=rules, not_before=not_before, now=now)


def _by_verdict(verdict: Assessment, usage: FleetUsage) -> Judgement:
    if verdict.state is State.UNKNOWN or verdict.peak is None:
        return Judgement(Activity.UNKNOWN, 0.0, verdict.reason)
    peak = verdict.peak * 100
    idle_all_window = (
        verdict.state is State.IDLE
        and verdict.idle_for >= usage.window
        and verdict.peak <= usage.threshold
    )
    if idle_all_window:
        return Judgement(Activity.INACTIVE, peak, verdict.reason)
    # Active with a low peak (the window is not complete yet) reports 100, never a value
    # at or below the threshold, so value and activity never disagree.
    value = peak if verdict.peak > usage.threshold else FULL
    return Judgement(Activity.ACTIVE, value, verdict.reason)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10]
