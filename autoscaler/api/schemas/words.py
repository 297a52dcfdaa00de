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
    "whole window: reported, never stopped), `idle` (the only class that can lead to a "
    "stop) and `unknown` (data missing, or a configured signal failed: never stopped). The "
    "other states say why usage does not decide: `grace`, `exempt`, `protected`, `paused`, "
    '`pending`, `deactivated`, `keda-managed`, `snoozed` (someone said "keep it": no stop '
    "before `notice.snoozedUntil`), `unsupported` (cannot be judged, e.g. KAI's fractional "
    "GPUs: reported, never stopped)."
)
MANAGER_WORDS = f"What admits the workload, and so how it is stopped: {manager_words()}."
