"""The policy engine replayed over history, one chunk at a time, for several variants at once.

At each decision step the real `decide` judges every workload that could be acted on (those
with a sample in the window and no slot above the threshold in it) or be idle-held, with the
evidence signals the live read would have had then (`stepping.py`, `sightings.py`). Any other
step cannot lead to an action (the engine acts only on a known peak at or below the
threshold), so it is skipped without asking; this is what makes a week of a thousand GPUs
fast. A workload the policy protects whatever its usage (namespace, owner kind) is asked once.

A would-be deactivation holds its GPUs' hours until the workload's GPUs are busy again (the
user would have come back and reactivated it: a regret when within the horizon, and a fresh
grace period after), or until its series end, or until the end of the range.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from autoscaler.backtest.deactivation import Deactivation, Opened, closed
from autoscaler.backtest.identity import Resolver, WorkloadKey
from autoscaler.backtest.queues import QueueHistory
from autoscaler.backtest.rulebook import HistoryMatch, View, match_from_history, views_of
from autoscaler.backtest.sightings import EvidenceTrack
from autoscaler.backtest.signals import EvidenceAnswer
from autoscaler.backtest.states import StateCount, StateTally
from autoscaler.backtest.stepping import Pass
from autoscaler.backtest.timeline import Chunk, GpuTrack, WorkloadTrack
from autoscaler.backtest.variant import Variant
from autoscaler.domain.policy.decisions import Policy
from autoscaler.domain.usage.evidence import NO_EVIDENCE, FleetEvidence
from autoscaler.domain.usage.gpus import GpuKey


@dataclass(frozen=True)
class Settings:
    """What the replay needs besides the policy."""

    start: datetime  # first decision
    end: datetime
    slot: int  # seconds
    step: int  # seconds between decisions, a multiple of the slot
    horizon: timedelta  # activity back within this is a regret
    lookback: int  # seconds back to look for the last busy slot (policy.idleSinceLookback)


@dataclass
class Run:
    """One variant's memory across chunks."""

    variant: Variant
    views: dict[str, View]  # by rule name, or one for EVERYONE
    off: dict[WorkloadKey, Opened] = field(default_factory=dict)
    reactivated: dict[WorkloadKey, int] = field(default_factory=dict)
    left_alone: set[WorkloadKey] = field(default_factory=set)
    done: list[Deactivation] = field(default_factory=list)
    states: StateTally = field(default_factory=StateTally)  # what each judged step came out


class Replay:
    def __init__(
        self,
        *,
        policy: Policy,
        variants: Sequence[Variant],
        settings: Settings,
        resolver: Resolver,
        queues: QueueHistory | None = None,
        queue_of: Mapping[str, str] | None = None,  # namespace -> ClusterQueue, for rules
        evidence: EvidenceTrack | None = None,  # None: no evidence signal read
    ) -> None:
        self.settings = settings
        self._evidence = evidence
        self.queues = queues  # who waited, for when-contended variants
        self._resolver = resolver
        self._rules, self._queue_of = policy.rules, dict(queue_of or {})
        self.cap = policy.max_deactivations_per_cycle
        self._runs = [Run(v, views_of(v, policy, slot=settings.slot)) for v in variants]
        views = [view for run in self._runs for view in run.views.values()]
        self._keep = max(v.span for v in views) + 1  # coverage reads window + 1 slots
        self._thresholds = tuple(sorted({v.threshold for v in views}))
        self.matches: dict[WorkloadKey, HistoryMatch] = {}  # each workload's rule
        self._models: dict[WorkloadKey, set[str]] = {}  # its GPUs' modelName
        self._gpus: dict[GpuKey, GpuTrack] = {}
        self.workloads: dict[WorkloadKey, WorkloadTrack] = {}
        self.skipped: set[tuple[str, str]] = set()  # GPU pods not judged: see `unknown`

    @property
    def gpu_count(self) -> int:
        return len({(g.key.uuid, g.key.mig_instance) for g in self._gpus.values()})

    @property
    def workload_count(self) -> int:
        return len(self.workloads)

    @property
    def kind_counts(self) -> dict[str, int]:
        """How many workloads of each owner kind."""
        return dict(sorted(Counter(key.kind for key in self.workloads).items()))

    @property
    def unknown(self) -> dict[tuple[str, str], str]:
        """Why each GPU pod whose owner cannot be told was not judged."""
        return {pod: why for pod, why in self._resolver.unknown.items() if pod in self.skipped}

    @property
    def named(self) -> int:
        """How many GPU pods got their RayCluster from KubeRay's pod names alone."""
        return len(self._resolver.named)

    def feed(self, chunk: Chunk, evidence: Sequence[EvidenceAnswer] = ()) -> list[str]:
        """Replay the chunk's steps; returns warnings about its evidence (a failed query)."""
        warnings = self._evidence.feed(chunk, evidence) if self._evidence else []
        self._register(chunk)
        for gpu in self._gpus.values():
            gpu.load(chunk)
        for workload in self.workloads.values():
            workload.load(self._thresholds)
            for gpu in workload.gpus:
                if gpu.first_seen is not None:
                    first = workload.pods.get(gpu.key.pod, gpu.first_seen)
                    workload.pods[gpu.key.pod] = min(first, gpu.first_seen)
        for run in self._runs:
            Pass(self, run, chunk).run()
        for gpu in self._gpus.values():
            gpu.finish(chunk, keep=self._keep)
        return warnings

    def evidence_at(self, now: int, gpus: Iterable[GpuKey]) -> FleetEvidence:
        """The evidence a live cycle at `now` would have read, for these GPUs."""
        return self._evidence.at(now, gpus) if self._evidence else NO_EVIDENCE

    def states(self) -> dict[Variant, tuple[StateCount, ...]]:
        """Each variant's states at the steps it judged."""
        return {run.variant: run.states.counts() for run in self._runs}

    def results(self) -> list[tuple[Variant, list[Deactivation]]]:
        """Each variant's would-be deactivations, open ones closed at their series' end."""
        end = int(self.settings.end.timestamp())
        found = []
        for run in self._runs:
            for key, opened in sorted(run.off.items()):
                last = self.workloads[key].last_real() or opened.at
                until = min(max(last, opened.at), end)
                run.done.append(closed(opened, key, until=until, horizon=self.settings.horizon))
            run.off.clear()
            found.append((run.variant, sorted(run.done, key=lambda d: (d.at, d.workload))))
        return found

    def _register(self, chunk: Chunk) -> None:
        new = [key for key in chunk.values if key not in self._gpus]
        for key in new:
            self._resolver.learn(key.namespace, key.pod)
        for key in new:
            workload = self._resolver.resolve(key.namespace, key.pod, dict(chunk.labels[key]))
            if workload is None:
                self.skipped.add((key.namespace, key.pod))
                continue
            self.skipped.discard((key.namespace, key.pod))  # its owner's series came later
            track = GpuTrack(key, workload, self._thresholds)
            self._gpus[key] = track
            self.workloads.setdefault(workload, WorkloadTrack(workload)).gpus.append(track)
            models = self._models.setdefault(workload, set())
            models.update(m for m in [chunk.labels[key].get("modelName")] if m)
            self.matches[workload] = match_from_history(
                workload, models=models, rules=self._rules, queue_of=self._queue_of
            )
