"""The words every surface reports: where a workload stands, and what the cycle does."""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    """Where a workload stands in one cycle; every surface reports these same words."""

    BUSY = "busy"
    IDLE = "idle"
    LOADING = "loading"  # near-zero compute, but loading (framebuffer, PCIe, power): no stop
    IDLE_HELD = "idle-held"  # some GPUs busy, others idle the whole window: reported only
    # Admitted, yet no GPU pod runs (image not pulled, crash loop, unschedulable, no pod):
    # quota held without work, decided from Kubernetes objects (domain/usage/not_running.py)
    NOT_RUNNING = "not-running"
    # No GPU pod runs yet, but something is bringing them up: a pending ProvisioningRequest
    # admission check, or a node scale-up triggered for them. Never acted on.
    STARTING = "starting"
    UNKNOWN = "unknown"
    GRACE = "grace"
    EXEMPT = "exempt"
    SNOOZED = "snoozed"  # idle, but someone said "keep it" until a time (ISSUE 15)
    PROTECTED = "protected"  # a namespace left out, a protected priority class, no owner
    # Its owner's kind is not acted on here (`cluster.ownerKinds`): not protected, never stopped
    KIND_NOT_ENABLED = "kind-not-enabled"
    PAUSED = "paused"
    PENDING = "pending"
    DEACTIVATED = "deactivated"
    KEDA_MANAGED = "keda-managed"
    UNSUPPORTED = "unsupported"  # cannot be judged (KAI's fractional GPUs): never stopped


class Action(StrEnum):
    """What the cycle does about a workload."""

    NONE = "none"
    DEACTIVATE = "deactivate"
    WOULD_DEACTIVATE = "would-deactivate"  # dry-run: decided, reported, never patched
    DEFERRED = "deferred"  # idle, but over the per-cycle cap: waits for a later cycle
    # The warning stage (ISSUE 15, domain/notices/staging.py). Each is one write of annotations on
    # the
    # Workload and its owner, an Event and the notifications; never a change of spec.
    WARN = "warn"  # a stop is planned: stop-planned-at and warned-at written, people told
    ALL_CLEAR = "all-clear"  # busy or loading again after a warning: the warning removed
    NOTIFY_IDLE_HELD = "notify-idle-held"  # some GPUs idle the whole window: told once
    # The opt-in last rung (rule action `delete`): the owner of a Workload we deactivated
    # and that stayed inactive for `deleteAfter`, after its own warning.
    WARN_DELETE = "warn-delete"
    DELETE = "delete"
    # Rule `reclaim: via-kueue` (docs/RECLAIM.md): the stop, once due, is our priority boost on
    # the Workload, so Kueue preempts it first when a waiter needs its quota; the mark is
    # removed once the stop is no longer due (busy, exempt, snoozed, unknown).
    MARK = "mark-for-preemption"
    UNMARK = "unmark"
    WOULD_DELETE = "would-delete"  # dry-run
