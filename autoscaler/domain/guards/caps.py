"""The caps on how many deactivations go ahead: per cycle, per hour, and none while the
breaker is open. One rule for all of them: the longest idle first, and the set freed for one
waiting Workload (`Decision.beneficiary`) all or nothing, since part of it lets nobody in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from autoscaler.domain.models import Action, Decision, WorkloadRef

# A via-kueue mark counts as the stop it stands for (docs/RECLAIM.md).
ACTING = (Action.DEACTIVATE, Action.WOULD_DEACTIVATE, Action.MARK)
# What a guard that must act on nothing holds besides the stops: a warning (a metrics glitch
# that makes everything look idle must warn nobody) and the delete rung.
WARNINGS = frozenset({Action.WARN})
NOTHING_AT_ALL = frozenset({Action.WARN, Action.WARN_DELETE, Action.DELETE})


def defer(decisions: Sequence[Decision], *, keep: int, why: str) -> tuple[Decision, ...]:
    """Keep at most `keep` acting decisions; the rest are deferred with `why`. The
    deactivation of a Workload Kueue preempted after our mark is never deferred: the mark was
    counted, and deferring it would let the idle Workload requeue."""
    room = max(keep, 0)  # a negative count would otherwise slice off most of the list
    kept: set[int] = set()
    for group in _groups_longest_idle_first(decisions):
        if len(group) <= room:
            kept.update(id(d) for d in group)
            room -= len(group)
    return tuple(
        replace(d, action=Action.DEFERRED, reason=f"{d.reason}; deferred: {why}")
        if d.action in ACTING and id(d) not in kept and not d.kueue_preempted
        else d
        for d in decisions
    )


def hold(
    decisions: Sequence[Decision], *, actions: frozenset[Action], why: str
) -> tuple[Decision, ...]:
    """Those of `actions` become NONE with `why`; a warning held was never given, so the
    notice no longer shows it."""
    return tuple(
        replace(
            d,
            action=Action.NONE,
            reason=f"{d.reason}; {why}",
            notice=replace(d.notice, warned_at=None, stop_at=None)
            if d.action is Action.WARN
            else d.notice,
        )
        if d.action in actions
        else d
        for d in decisions
    )


def release_broken_sets(decisions: Sequence[Decision]) -> tuple[Decision, ...]:
    """A waiter's set of which some member no longer acts (held back, contested, busy again)
    lets nobody in: its other members are left running too."""
    broken = {
        d.beneficiary for d in decisions if d.beneficiary is not None and d.action not in ACTING
    }
    return tuple(
        replace(
            d,
            action=Action.NONE,
            reason=f"{d.reason}; left running: the rest of the set freed for {d.beneficiary} "
            "does not go ahead this cycle",
        )
        if d.action in ACTING and d.beneficiary in broken
        else d
        for d in decisions
    )


def _groups_longest_idle_first(decisions: Sequence[Decision]) -> list[list[Decision]]:
    groups: dict[object, list[Decision]] = {}
    acting = (d for d in decisions if d.action in ACTING and not d.kueue_preempted)
    for decision in sorted(acting, key=_longest_idle):
        key = decision.beneficiary or id(decision)  # alone unless freed for a waiter
        groups.setdefault(key, []).append(decision)
    return list(groups.values())  # dicts keep insertion order: the longest idle member first


def _longest_idle(decision: Decision) -> tuple[bool, float, WorkloadRef]:
    since = decision.idle_since
    return (since is None, since.timestamp() if since else 0.0, decision.workload)
