"""What judging one workload's usage yields, and the numbers it is judged by.

Kept apart from `idleness.py` (the entry point) so the modules that weigh compute and
evidence (`classify.py`, `loading.py`) can share them without importing each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, TypeGuard

from autoscaler.domain.models import State
from autoscaler.domain.usage.evidence import Sighting

if TYPE_CHECKING:
    from autoscaler.domain.models import Decision


@dataclass(frozen=True)
class UsageRules:
    threshold: float  # utilization ratio at or below which a GPU counts as idle
    window: timedelta  # how long every GPU must stay idle
    slot: timedelta  # resolution of coverage and of "idle since"
    min_coverage: float  # share of slots that must hold a real sample
    stale_after: timedelta  # newest sample older than this: stale
    # Loading (evidence at near-zero compute) counts as activity for at most this long after
    # compute stopped (or admission); past it, the workload is judged on compute alone.
    max_loading: timedelta = timedelta(minutes=60)
    # Admitted this long (from the latest admission or reactivation) while no GPU pod runs:
    # not-running is due for the rule's action.
    not_running_after: timedelta = timedelta(minutes=30)


@dataclass(frozen=True)
class Assessment:
    state: State  # BUSY, LOADING, IDLE_HELD, IDLE, NOT_RUNNING, STARTING or UNKNOWN
    reason: str
    peak: float | None = None
    coverage: float | None = None
    idle_since: datetime | None = None
    idle_for: timedelta = timedelta(0)
    evidence: tuple[str, ...] = ()  # what the evidence signals saw, one line each
    idle_held_gpus: int = 0  # IDLE_HELD: GPUs idle the whole window beside busy ones
    # Until when loading would still count as activity (compute stopped + max_loading): the
    # fresh check blocks a stop on new loading evidence only before then. None: not idle.
    loading_counts_until: datetime | None = None
    # NOT_RUNNING only: who acts on it instead of us (Kueue's waitForPodsReady), and when;
    # reported, never acted on. `idle_since`/`idle_for` then count the time held.
    left_to: str | None = None
    # NOT_RUNNING only: what is wrong with its GPU pods, each trouble once and without the
    # pods' names ("image ghcr.io/x:v2 cannot be pulled (ImagePullBackOff)"): the notices'
    # headline (domain/notices/held.py).
    trouble: str | None = None
    # UNKNOWN only: every GPU pod runs, but the GPU metrics miss some of its GPUs: a
    # monitoring gap ("running but not monitored") an admin must fix.
    unmonitored: bool = False


def held_class(decision: Decision | None) -> State:
    """How the workload holds its GPUs, as the decision's usage verdict says: NOT_RUNNING for
    quota held without work (admitted, no GPU pod runs), IDLE otherwise (idle, another class,
    or no verdict). A warned or snoozed workload keeps its verdict's class. The one answer
    the notices' words (`domain/notices/held.py`), the audit record (`domain/audit/subjects.py`)
    and the savings' two figures (`domain/audit/savings.py`) read."""
    verdict = decision.assessment if decision is not None else None
    if verdict is not None and verdict.state is State.NOT_RUNNING:
        return State.NOT_RUNNING
    return State.IDLE


def running_unmonitored(decision: Decision | None) -> bool:
    """Its GPU pods run, but the GPU metrics miss some of its GPUs (the verdict's
    `unmonitored`): counted in /metrics, listed by the REST listing."""
    verdict = decision.assessment if decision is not None else None
    return verdict is not None and verdict.unmonitored


@dataclass(frozen=True)
class Compute:
    """What compute (and Ray task execution) says, before the device evidence is weighed."""

    peak: float | None  # highest utilization in the window, any GPU
    coverage: float  # the thinnest GPU's
    since: datetime  # idle since: the last busy sample or Ray task, or `not_before`
    recently_busy: bool  # some GPU's peak in the window is above the threshold


def known(peak: float | None) -> TypeGuard[float]:
    """A NaN compares false with everything, so it would pass for idle: treat it as absent."""
    return peak is not None and not math.isnan(peak)


def clock(at: datetime) -> str:
    """A time of day as the reasons show it (UTC, like every time in the domain; a time read
    with another offset, such as a person's exemption, is turned to UTC first)."""
    return at.astimezone(UTC).strftime("%H:%M")


def dated_clock(at: datetime, *, now: datetime) -> str:
    """`clock`, with the date in front when `at` falls on another day than `now` (UTC):
    "12:00" today, "2025-02-28 12:00" three days ago, "2025-03-05 11:55" two days ahead."""
    at, now = at.astimezone(UTC), now.astimezone(UTC)
    return clock(at) if at.date() == now.date() else at.strftime("%Y-%m-%d %H:%M")


# A sighting whose slot ended at most this many slots before now is current: the newest
# slot of a read ends at its step, up to a slot before the cycle's `now`.
CURRENT_SLOTS = 2


def current(sighting: Sighting, *, rules: UsageRules, now: datetime) -> bool:
    return now - sighting.last_at <= rules.slot * CURRENT_SLOTS
