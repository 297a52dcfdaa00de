"""Answering KEDA from the latest snapshot only: what the gRPC servicer and HTTP route share.

No call reaches Prometheus or Kubernetes. Each snapshot is indexed once (workloads by
reference, GPU pods by namespace), and each distinct target is judged at most once per
snapshot, so thousands of ScaledObjects and open streams cost lookups, not work. A trigger's
metadata is read (validated) once too: KEDA sends the same metadata on every poll, and
validating it was most of our own time per call (issue 18: measured against `serve`).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping
from datetime import timedelta

from autoscaler.core.ports import Clock
from autoscaler.domain.models import (
    DEFAULT_PROFILE,
    PodInfo,
    Snapshot,
    State,
    WorkloadRef,
    WorkloadStatus,
)
from autoscaler.keda.metadata import ParsedMetadata, parse_metadata
from autoscaler.keda.targets import (
    Activity,
    Judgement,
    Judging,
    Target,
    judge_pods,
    judge_workload,
)

_MEMO_LIMIT = 10_000  # distinct targets remembered per snapshot; beyond it, judged per call
_WARNED_LIMIT = 10_000
_READ_LIMIT = 10_000  # distinct trigger metadata remembered; when full, forgotten at once
# Metadata larger than this (in characters) is read on every call, never remembered: KEDA's
# own keys are not ours to bound, and the memory kept must stay small whoever calls.
_READ_MAX_CHARS = 2048
MetadataKey = tuple[str | None, bool, frozenset[tuple[str, str]]]


class SnapshotView:
    """One snapshot, indexed, with its judgements remembered."""

    def __init__(self, snapshot: Snapshot, *, judging: Judging) -> None:
        self.snapshot = snapshot
        self._judging = judging
        self._rows = {row.ref: row for row in snapshot.workloads}
        pods: defaultdict[str, list[PodInfo]] = defaultdict(list)
        for record in snapshot.gpu_pods:
            pods[record.namespace].append(record.pod)
        self._pods = dict(pods)
        # Read and written from the gRPC loop and HTTP worker threads alike: a race at worst
        # judges a target twice, each time from the same immutable snapshot.
        self._memo: dict[Target, Judgement] = {}

    def judge(self, target: Target) -> Judgement:
        found = self._memo.get(target)
        if found is None:
            found = self._judge(target)
            if len(self._memo) < _MEMO_LIMIT:
                self._memo[target] = found
        return found

    def _judge(self, target: Target) -> Judgement:
        snapshot = self.snapshot
        if not snapshot.cluster_ok:
            return _unknown(f"the cluster could not be read in cycle {snapshot.cycle}")
        row = None
        if target.selector is None:
            row = self._rows.get(WorkloadRef(target.namespace, target.workload or ""))
        # A Workload asked about without a profile is judged under its own rule's view, with
        # the rule and the usage verdict its decision carries.
        if row is not None and target.profile == DEFAULT_PROFILE:
            return self._decided(row)
        view = target.profile
        usage = snapshot.usage.get(view)
        if usage is None:
            return _not_evaluated(view, snapshot)
        rule = self._judging.under(view)
        if target.selector is None:
            return judge_workload(row, usage, snapshot=snapshot, rule=rule)
        matched = [
            p for p in self._pods.get(target.namespace, ()) if target.selector.matches(p.labels)
        ]
        return judge_pods(target, matched, usage, snapshot=snapshot, rule=rule)

    def _decided(self, row: WorkloadStatus) -> Judgement:
        decision, snapshot = row.decision, self.snapshot
        rule = decision.rule
        if decision.rule_unknown is not None:
            # KEDA-managed rows never reach the loop's own check: say it here too
            return _unknown(f"rule {rule.name} cannot be evaluated: {decision.rule_unknown}")
        if decision.state is State.UNKNOWN:
            return _unknown(decision.reason)  # the loop's own "unknown" is KEDA's too
        usage = snapshot.usage.get(rule.name)
        if usage is None:
            return _not_evaluated(rule.name, snapshot)
        return judge_workload(row, usage, snapshot=snapshot, rule=rule, verdict=decision.assessment)


class KedaAnswers:
    def __init__(
        self,
        *,
        latest: Callable[[], Snapshot | None],
        judging: Judging,
        profiles: Collection[str],
        clock: Clock,
        max_snapshot_age: timedelta,
        logger: logging.Logger,
    ) -> None:
        self._latest = latest
        self._judging = judging
        self.profiles = frozenset(profiles)  # the rules a trigger may name in `profile`
        self._clock = clock
        self._max_age = max_snapshot_age
        self._log = logger
        self._view: SnapshotView | None = None
        self._warned: set[tuple[str, str]] = set()
        # Read and written from the gRPC loop and HTTP worker threads alike: a race at worst
        # reads the same metadata twice. Refused metadata is never kept: it raises each time.
        self._read: dict[MetadataKey, ParsedMetadata] = {}

    def target(
        self,
        metadata: Mapping[str, str],
        *,
        default_namespace: str | None,
        caller: str,
        exact: bool = False,
    ) -> Target:
        """The trigger's target; raises MetadataError. `caller` names it in warnings; `exact`:
        the metrics-api query's reading (`parse_metadata`)."""
        key: MetadataKey = (default_namespace, exact, frozenset(metadata.items()))
        parsed = self._read.get(key)
        if parsed is None:
            parsed = parse_metadata(
                metadata,
                default_namespace=default_namespace,
                profiles=self.profiles,
                exact=exact,
            )
            self._remember(key, parsed)
        for tls_key in parsed.ignored_tls_keys:
            self._warn_once(caller, tls_key)
        return parsed.target

    def _remember(self, key: MetadataKey, parsed: ParsedMetadata) -> None:
        if sum(len(name) + len(value) for name, value in key[2]) > _READ_MAX_CHARS:
            return
        if len(self._read) >= _READ_LIMIT:
            self._read.clear()
        self._read[key] = parsed

    def judge(self, target: Target) -> Judgement:
        snapshot = self._latest()
        if snapshot is None:
            return _unknown("no cycle has completed yet")
        age = self._clock.now() - snapshot.taken_at
        if age > self._max_age:
            return _unknown(
                f"the latest cycle ({snapshot.cycle}) is {int(age.total_seconds())}s old, "
                f"more than {int(self._max_age.total_seconds())}s: the loop is not running"
            )
        view = self._view
        if view is None or view.snapshot is not snapshot:
            view = self._view = SnapshotView(snapshot, judging=self._judging)
        return view.judge(target)

    def _warn_once(self, caller: str, key: str) -> None:
        if (caller, key) in self._warned:
            return
        if len(self._warned) >= _WARNED_LIMIT:
            self._warned.clear()
        self._warned.add((caller, key))
        self._log.warning(
            "trigger metadata of %s sets %s, which KEDA ignores there: give TLS material "
            "through a TriggerAuthentication",
            caller,
            key,
            extra={"scaled_object": caller, "metadata_key": key},
        )


def _unknown(reason: str) -> Judgement:
    return Judgement(Activity.UNKNOWN, 0.0, reason)


def _not_evaluated(view: str, snapshot: Snapshot) -> Judgement:
    return _unknown(f"profile {view} was not evaluated in cycle {snapshot.cycle}")
