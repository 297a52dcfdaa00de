"""The flavor Kueue picks for one resource group of one pod set, as Kueue's flavor assigner
does (kubernetes-sigs/kueue pkg/scheduler/flavorassigner/flavorassigner.go:
`findFlavorForPodSets`, `fitsResourceQuota`, `isPreferred`, `shouldTryNextFlavor`).

    choose_flavor(trials, policy) -> Choice

Each flavor of the group, in the ClusterQueue's order, is a `Trial`: skipped (taints, node
labels, a missing ResourceFlavor), or one mode per requested resource: FIT (with its
borrowing level: 0 within the queue's nominal quota, 1 from the cohort), NO_FIT (beyond
what the queue could ever get), or the preemption Kueue would simulate (the request is
within the nominal quota, or `borrowWithinCohort` allows preempting while borrowing). That
simulation's answer is known only where the queue's preemption policies leave no candidate
(NO_CANDIDATES: every policy Never, or no workload a policy could pick in that flavor and
resource); otherwise it is `MAYBE`, and every answer Kueue's simulation could give (no
candidates, preempt or reclaim, at either borrowing level) is tried: a choice that differs
between them is unknown. A flavor's mode is its worst resource's; the search stops at the
first flavor `flavorFungibility` does not let it pass (`whenCanBorrow`, `whenCanPreempt`),
else keeps the preferred one (`preference`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from autoscaler.domain.queues.facts import TRY_NEXT_FLAVOR, AdmissionPolicy

MAX_DOUBTS = 4  # simulated preemptions whose answers are enumerated; beyond: unknown


class Mode(IntEnum):
    """Kueue's preemptionMode, worst first."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4


@dataclass(frozen=True)
class Granular:
    mode: Mode
    level: int  # borrowing level: 0 within the queue's nominal quota, 1 from the cohort


WORST = Granular(Mode.NO_FIT, 1 << 30)
BEST = Granular(Mode.FIT, 0)
MAYBE = None  # Kueue's preemption simulation, whose answer is not known here
OUTCOMES = (
    Granular(Mode.NO_CANDIDATES, 1),
    *(Granular(mode, level) for mode in (Mode.PREEMPT, Mode.RECLAIM) for level in (0, 1)),
)


@dataclass(frozen=True)
class Trial:
    """One flavor tried for a group: why it is skipped, or each resource's mode (MAYBE: the
    preemption simulation decides) and why it does not simply fit."""

    flavor: str
    skipped: str | None = None
    modes: Mapping[str, Granular | None] | None = None
    misses: tuple[str, ...] = ()


@dataclass(frozen=True)
class Choice:
    """The flavor chosen when Kueue would admit by quota alone; `unknown` when that depends
    on a preemption simulation."""

    flavor: str | None
    unknown: str | None = None


def is_preferred(a: Granular, b: Granular, policy: AdmissionPolicy) -> bool:
    """flavorassigner.go `isPreferred`: whether mode `a` is better than `b`."""
    if a.mode is Mode.NO_FIT:
        return False
    if b.mode is Mode.NO_FIT:
        return True
    if (a.mode is Mode.NO_CANDIDATES) != (b.mode is Mode.NO_CANDIDATES):
        return a.mode is not Mode.NO_CANDIDATES
    if policy.preemption_over_borrowing:  # the borrowing level first, then the mode
        return (-a.level, a.mode) > (-b.level, b.mode)
    return (a.mode, -a.level) > (b.mode, -b.level)


def should_try_next(mode: Granular, policy: AdmissionPolicy) -> bool:
    """flavorassigner.go `shouldTryNextFlavor`."""
    if mode.mode in (Mode.NO_FIT, Mode.NO_CANDIDATES):
        return True
    if mode.mode in (Mode.PREEMPT, Mode.RECLAIM) and policy.when_can_preempt == TRY_NEXT_FLAVOR:
        return True
    return mode.level > 0 and policy.when_can_borrow == TRY_NEXT_FLAVOR


def choose_flavor(trials: Sequence[Trial], policy: AdmissionPolicy) -> Choice:
    """The flavor Kueue assigns, or why that is not known (see the module)."""
    doubts = [
        (t.flavor, name) for t in trials for name, mode in (t.modes or {}).items() if mode is MAYBE
    ]
    if len(doubts) > MAX_DOUBTS:
        return Choice(None, unknown=_doubt_reason(doubts))
    answers = set()
    for outcome in itertools.product(OUTCOMES, repeat=len(doubts)):
        answers.add(_search(trials, policy, dict(zip(doubts, outcome, strict=True))))
    if len(answers) == 1:
        flavor, mode = answers.pop()
        return Choice(flavor if mode.mode is Mode.FIT else None)
    return Choice(None, unknown=_doubt_reason(doubts))


def _search(
    trials: Sequence[Trial], policy: AdmissionPolicy, resolved: Mapping[tuple[str, str], Granular]
) -> tuple[str | None, Granular]:
    best: str | None = None
    best_mode = WORST
    for trial in trials:
        if trial.modes is None:
            continue
        representative = BEST
        for name, mode in trial.modes.items():
            each = resolved[(trial.flavor, name)] if mode is MAYBE else mode
            if is_preferred(representative, each, policy):
                representative = each
        if not should_try_next(representative, policy):
            return _settled(trial.flavor, representative)
        if is_preferred(representative, best_mode, policy):
            best, best_mode = trial.flavor, representative
    return _settled(best, best_mode)


def _settled(flavor: str | None, mode: Granular) -> tuple[str | None, Granular]:
    """What matters to the outcome: the flavor of a fit; else whether Kueue would preempt
    (PREEMPT, RECLAIM) or neither admit nor preempt (NO_FIT, NO_CANDIDATES)."""
    if mode.mode is Mode.FIT:
        return flavor, Granular(Mode.FIT, 0)
    if mode.mode in (Mode.PREEMPT, Mode.RECLAIM):
        return None, Granular(Mode.PREEMPT, 0)
    return None, Granular(Mode.NO_FIT, 0)


def _doubt_reason(doubts: Sequence[tuple[str, str]]) -> str:
    where = ", ".join(f"{name} in flavor {flavor}" for flavor, name in doubts)
    return (
        f"Kueue would simulate preemption for {where} under the ClusterQueue's preemption "
        f"policy, and the workloads it could pick are not modelled"
    )
