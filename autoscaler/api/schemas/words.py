"""How the OpenAPI document explains the words a workload view carries: its state and what
manages it. Every surface uses the same words (`domain/states.py`,
`domain/policy/management.py`)."""

from __future__ import annotations

from autoscaler.domain.policy.management import manager_words

STATE_WORDS = (
    "Where the workload stands this cycle. The usage classes: `busy` (computing, or Ray "
    "tasks executing), `loading` (compute near zero while framebuffer memory rises, PCIe or "
    "NVLink receives, or power is above the model's idle baseline; counted as activity for "
    "at most `maxLoading`), `idle-held` (some GPUs busy, `idleHeldGpus` of them idle the "
    "whole window: reported, never stopped), `idle` (can lead to a stop), `not-running` "
    "(admitted, yet no GPU pod runs: image not pulled, crash loop, container config error, "
    "unschedulable, no pod created; quota held without work, stopped like idle work after "
    "`notRunningAfter` unless Kueue's waitForPodsReady is in charge of it), `starting` (no "
    "GPU pod runs yet, but an admission check is pending or a node scale-up was triggered "
    "for it: never stopped) and `unknown` (data missing, a configured signal failed, or "
    "partly running: never stopped; `runningUnmonitored` when its GPU pods run but the GPU "
    "metrics miss them). The "
    "other states say why usage does not decide: `grace`, `exempt`, `protected`, "
    "`kind-not-enabled` (its owner's kind is not acted on: `cluster.ownerKinds`), `paused`, "
    '`pending`, `deactivated`, `keda-managed`, `snoozed` (someone said "keep it": no stop '
    "before `notice.snoozedUntil`), `unsupported` (cannot be judged, e.g. KAI's fractional "
    "GPUs: reported, never stopped)."
)
MANAGER_WORDS = f"What admits the workload, and so how it is stopped: {manager_words()}."
