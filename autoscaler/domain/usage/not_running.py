"""Quota held without work: an admitted Workload none of whose GPU pods runs. Decided from
what Kubernetes says of its pods and of its admission (`pod_states.py`), never from metrics:
the GPU metrics see only GPUs that run something, so they cannot tell this apart from a
monitoring gap.

`judge_start` answers, for an admitted Kueue Workload whose pods are read:
- None: every GPU pod runs (phase Running, none of its GPU containers waiting; a sidecar
  without GPUs may wait); the metrics judge it.
- UNKNOWN when the chain from the Workload to its pods could not be followed for sure
  (`pods_unsure`), whatever pods were found: a missed pod may be the busy one.
- UNKNOWN, "partly running": some GPU pods run, others do not (or do not exist): reported,
  never stopped; or no GPU pod runs yet, but none is in a state known to be stuck
  (ContainerCreating, say: a large image may take long to pull).
- STARTING: no GPU pod runs, but something is bringing them up: an admission check still
  Pending (a ProvisioningRequest), or a node scale-up triggered for one of them within the
  rule's limit. Never acted on: neither Kueue nor a node autoscaler is competed with.
- NOT_RUNNING: no GPU pod runs, and at least one is stuck for a reason the kubelet or the
  scheduler states (image not pulled, crash loop, container config error, unschedulable),
  or no GPU pod was created at all. It is held since the latest of the admission, the
  reactivation (the Workload's conditions) and the newest GPU pod's creation (so a restart
  changes nothing, and a pod re-created long after admission starts its own count), and is
  due for the rule's action once held for `notRunningAfter`. Where Kueue's own `waitForPodsReady`
  times this Workload out (its PodsReady condition is there), the class is reported with
  Kueue's deadline and the act left to Kueue (`left_to`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from autoscaler.domain.durations import format_duration
from autoscaler.domain.models import PodInfo, State, WorkloadInfo
from autoscaler.domain.text import clip
from autoscaler.domain.usage.assessment import Assessment, UsageRules, dated_clock
from autoscaler.domain.usage.pod_states import (
    CONFIG_ERROR,
    CRASH_LOOP,
    IMAGE_PULL,
    AdmissionFacts,
    ContainerWait,
)

KUEUE_TIMER = "Kueue's waitForPodsReady"
# Kueue's PodsReady reason while a once-ready Workload waits for a failed pod to come back;
# its timer then counts from the condition, not from admission (kueue
# pkg/controller/core/workload_controller.go, admittedNotReadyWorkload).
WAIT_FOR_RECOVERY = "WaitForRecovery"


# A reason names at most this many pods with one trouble, and this many troubles ("and N
# more"), and keeps this many characters of a kubelet's or the scheduler's message: it goes
# into audit records in the runtime-state ConfigMap (1 MiB in all), annotations and Events,
# however many pods are stuck (32 unschedulable workers say one thing once).
SHOWN = 3
MESSAGE_KEPT = 200


@dataclass(frozen=True)
class Trouble:
    """Why one GPU pod does not run; `stuck` when it will not start by itself. `said` is
    what follows the pod's name ("pod w-0: image ... cannot be pulled", "pod w-0 cannot be
    scheduled: ..."); `what` is the same without the pod, as a notice's headline says it."""

    pod: str
    said: str
    stuck: bool
    what: str = ""


def judge_start(workload: WorkloadInfo, *, rules: UsageRules, now: datetime) -> Assessment | None:
    """The not-running class of an admitted workload, or None when its GPU pods all run (or
    it is not a Kueue Workload whose pods are read): the metrics judge it then."""
    facts = workload.admission
    if facts is None or not facts.pods_read or not workload.admitted:
        return None
    pods = workload.gpu_pods
    if not pods and facts.gpus == 0:
        return None  # no GPU asked for: nothing held
    if facts.pods_unsure is not None:
        return _unsure(workload, facts)
    troubles = [
        pod_trouble(p, scale_ups_read=facts.scale_ups_read)
        for p in pods
        if not p.gpu_containers_run
    ]
    if any(p.gpu_containers_run for p in pods):
        return _partly(workload, troubles)
    starting = _starting(pods, facts, rules=rules, now=now)
    if starting is not None:
        return Assessment(State.STARTING, f"starting: {starting}; no action")
    if not pods:
        held = _no_gpu_pod(workload, facts, rules=rules, now=now)
    else:
        held = _none_runs(workload, facts, troubles, rules=rules, now=now)
    return held


def _none_runs(
    workload: WorkloadInfo,
    facts: AdmissionFacts,
    troubles: list[Trouble],
    *,
    rules: UsageRules,
    now: datetime,
) -> Assessment:
    """No GPU pod runs: held when one is stuck, else unknown (it may yet start)."""
    stuck = [t for t in troubles if t.stuck]
    if not stuck:
        return Assessment(State.UNKNOWN, f"no GPU pod runs yet: {listed(troubles)}")
    what, trouble = listed(stuck), headline(stuck)
    return _held(workload, facts, what=what, trouble=trouble, rules=rules, now=now)


def _no_gpu_pod(
    workload: WorkloadInfo, facts: AdmissionFacts, *, rules: UsageRules, now: datetime
) -> Assessment:
    """GPUs admitted, and no GPU pod found: none created (the adapter followed the chain
    from the Workload to its pods for sure, `_unsure` else)."""
    none = f"no GPU pod created for the {facts.gpus} GPUs admitted"
    return _held(workload, facts, what=none, trouble=none, rules=rules, now=now)


def _unsure(workload: WorkloadInfo, facts: AdmissionFacts) -> Assessment:
    """The chain from the Workload to its pods could not be followed for sure (an
    intermediate object missing or unreadable, its owner not found, a pod skipped as
    malformed): a pod it missed may be the busy one, or the one that runs, whatever the pods
    found say. Unknown, never stopped (a selector that matches nothing looks the same)."""
    how = f" by {facts.pods_found_by}" if facts.pods_found_by else ""
    found = len(workload.gpu_pods)
    what = "no GPU pod" if not found else f"{found} GPU pod{'s' if found > 1 else ''}"
    return Assessment(State.UNKNOWN, f"{what} found{how}, but {facts.pods_unsure}; never stopped")


def pod_trouble(pod: PodInfo, *, scale_ups_read: bool) -> Trouble:
    """Why this pod does not run, in the kubelet's or the scheduler's words. In phase Running
    only its GPU containers tell; before, any container holds the pod back (an init
    container, a sidecar that never started)."""
    waits = [w for w in pod.waiting if w.holds_gpus or not pod.phase_running]
    for wait in waits:
        if wait.stuck:
            what = _waiting_text(wait)
            return Trouble(pod.name, f": {what}", stuck=True, what=what)
    if pod.unschedulable is not None:
        why = clip(pod.unschedulable or "Unschedulable", MESSAGE_KEPT)
        said = f" cannot be scheduled: {why}"
        if not scale_ups_read:  # a node autoscaler may be bringing a node: cannot tell
            return Trouble(pod.name, f"{said} (node scale-up Events unreadable)", stuck=False)
        return Trouble(pod.name, said, stuck=True, what=f"a GPU pod cannot be scheduled ({why})")
    waiting = ", ".join(sorted({w.reason for w in waits}))
    return Trouble(pod.name, f" is {pod.phase}{f' ({waiting})' if waiting else ''}", False)


def listed(troubles: Sequence[Trouble]) -> str:
    """Each trouble once, naming at most SHOWN pods with it, and at most SHOWN troubles
    ("and N more"): bounded however many pods there are."""
    pods_by_said: dict[str, list[str]] = {}
    for trouble in troubles:
        pods_by_said.setdefault(trouble.said, []).append(trouble.pod)
    groups = list(pods_by_said.items())
    lines = [_named(pods, said) for said, pods in groups[:SHOWN]]
    rest = sum(len(pods) for _, pods in groups[SHOWN:])
    if rest:
        lines.append(f"{rest} more pod{'s' if rest > 1 else ''} with other troubles")
    return "; ".join(lines)


def _named(pods: list[str], said: str) -> str:
    if len(pods) == 1:
        return f"pod {pods[0]}{said}"
    more = len(pods) - SHOWN
    names = ", ".join(pods[:SHOWN]) + (f" and {more} more" if more > 0 else "")
    return f"pods {names}{said.replace(' is ', ' are ', 1) if said.startswith(' is ') else said}"


def headline(troubles: Sequence[Trouble]) -> str:
    """What is wrong without the pods' names, each once, at most SHOWN of them."""
    whats = list(dict.fromkeys(t.what for t in troubles if t.what))
    more = len(whats) - SHOWN
    return "; ".join(whats[:SHOWN]) + (f"; and {more} more" if more > 0 else "")


def _waiting_text(wait: ContainerWait) -> str:
    if wait.reason == IMAGE_PULL:
        return f"image {clip(wait.image, MESSAGE_KEPT)} cannot be pulled ({wait.reason})"
    if wait.reason == CRASH_LOOP:
        return f"container {wait.container} keeps crashing ({CRASH_LOOP})"
    detail = f": {clip(wait.message, MESSAGE_KEPT)}" if wait.message else ""
    if wait.reason == CONFIG_ERROR:
        return f"container {wait.container} cannot be created ({CONFIG_ERROR}{detail})"
    return f"container {wait.container} is waiting ({wait.reason}{detail})"


def _partly(workload: WorkloadInfo, troubles: list[Trouble]) -> Assessment | None:
    """Some GPU pod runs: None when all do (and every admitted pod exists), else reported
    as partly running, never stopped."""
    missing = max(workload.expected_pods - len(workload.pods), 0)
    if not troubles and not missing:
        return None
    running = [p for p in workload.gpu_pods if p.gpu_containers_run]
    of = len(workload.gpu_pods) + missing
    lines = [listed(troubles)] if troubles else []
    if missing:
        lines.append(f"{missing} admitted pod{'s' if missing > 1 else ''} not created")
    return Assessment(
        State.UNKNOWN,
        f"partly running: {len(running)} of {of} GPU pods run; {'; '.join(lines)}; "
        "reported, never stopped",
    )


def _starting(
    pods: tuple[PodInfo, ...], facts: AdmissionFacts, *, rules: UsageRules, now: datetime
) -> str | None:
    """What is still bringing the pods up, if anything: a pending admission check, or a node
    scale-up triggered within the rule's limit."""
    if facts.pending_checks:
        return f"admission check {', '.join(facts.pending_checks)} pending"
    recent = [
        (p.scale_up_at, p.name)
        for p in pods
        if p.scale_up_at is not None and now - p.scale_up_at < rules.not_running_after
    ]
    if recent:
        at, name = max(recent)
        return f"node scale-up triggered for pod {name} at {dated_clock(at, now=now)}"
    return None


def held_since(workload: WorkloadInfo) -> tuple[datetime, str] | None:
    """Since when, and what that is: the latest of the admission, the reactivation (the
    Workload's conditions) and the newest GPU pod's creation (its creationTimestamp), all
    read from the objects, so a restart changes nothing. A pod re-created long after
    admission (its node drained) starts its own count. None when Kueue recorded no
    admission time."""
    if workload.admitted_at is None:
        return None
    facts = workload.admission
    starts = [(workload.admitted_at, "admission")]
    if facts is not None and facts.reactivated_at is not None:
        starts.append((facts.reactivated_at, "reactivation"))
    starts += [(pod.created_at, f"pod {pod.name} was created") for pod in workload.gpu_pods]
    return max(starts, key=lambda start: start[0])


def _held(
    workload: WorkloadInfo,
    facts: AdmissionFacts,
    *,
    what: str,
    trouble: str,
    rules: UsageRules,
    now: datetime,
) -> Assessment:
    """`what` is wrong with which pods, `trouble` the same without their names."""
    start = held_since(workload)
    if start is None:
        return Assessment(State.UNKNOWN, f"{what}; admitted with no admission time recorded")
    since, counted = start
    held = max(now - since, timedelta(0))
    limit = format_duration(rules.not_running_after)
    shown = format_duration(timedelta(seconds=held // timedelta(seconds=1)))  # whole seconds
    span = f"{shown} of {limit}" if held < rules.not_running_after else f"{shown}, past {limit}"
    reason = f"not running for {span} (since {counted} at {dated_clock(since, now=now)}): {what}"
    left_to = None
    if facts.kueue_in_charge:
        left_to = KUEUE_TIMER
        reason = f"{reason}; {kueue_deadline(workload, facts, now=now)}; left to Kueue"
    return Assessment(
        State.NOT_RUNNING,
        reason,
        idle_since=since,
        idle_for=held,
        left_to=left_to,
        trouble=trouble,
    )


def kueue_deadline(workload: WorkloadInfo, facts: AdmissionFacts, *, now: datetime) -> str:
    """When Kueue's own timer evicts it, from the timeout Kueue's Configuration sets
    (`domain/kueue_config.py`): counted from admission, or from the condition itself while
    waiting for recovery (then with `recoveryTimeout`). Where the Configuration cannot be
    read or does not say, the deadline is unknown; the workload is left to Kueue either way."""
    ready = facts.pods_ready
    recovering = ready is not None and ready.reason == WAIT_FOR_RECOVERY and ready.since
    start = ready.since if recovering and ready is not None else workload.admitted_at
    if facts.kueue is None:
        return f"{KUEUE_TIMER} deadline unknown: Kueue's configuration not read"
    timeout, unknown = facts.kueue.pods_ready_timeout(recovering=bool(recovering))
    if unknown is not None:
        return f"{KUEUE_TIMER} deadline unknown: {unknown}"
    if start is None or timeout is None:
        return f"{KUEUE_TIMER} is in charge"
    which = "recoveryTimeout" if recovering else "timeout"
    by, counted = dated_clock(start + timeout, now=now), dated_clock(start, now=now)
    return (
        f"{KUEUE_TIMER} is in charge: it evicts it by {by} with its "
        f"{format_duration(timeout)} {which} (counted from {counted}; {facts.kueue.source})"
    )
