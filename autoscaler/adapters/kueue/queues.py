"""The `PendingWork` port over Kueue: ClusterQueues' quotas and usage, and who waits.

Waiters are the pending Workloads (active, not finished, neither quota reserved nor admitted)
whose LocalQueue exists, with their requests. Their order in each ClusterQueue comes from
Kueue's on-demand visibility API (visibility.kueue.x-k8s.io, GET
clusterqueues/<name>/pendingworkloads) when it is served: those it lists first, by position,
then any it does not list yet. When it is not served (404) or refused (403), the order is
Kueue's own for its queues (higher priority first, then older), from the Workloads, with one
warning logged once and a note in every QueueFacts: never "nobody waits". A failed read of
the queues is `QueueFacts.failure`; `read_queues` never raises.

Whether fair sharing is on, how Kueue orders the heads and whether admission fair sharing
is on come from Kueue's Configuration as the cycle already read it (`configuration`, the
cluster reader's reading: no request of its own), else from the status Kueue writes
(`adapters/kueue/unmodelled.py`); a note says which source decided.

Calls per read: the queue objects through `QueueObjects` (watch caches in `serve`), and one
visibility GET per ClusterQueue that has pending Workloads (one discovery while not served).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.objects import MALFORMED, Obj, queue_name_of
from autoscaler.adapters.kubernetes.resources import (
    VISIBILITY_GROUP,
    ApiResource,
    log_name,
    pending_workloads,
)
from autoscaler.adapters.kueue import queue_objects as parse
from autoscaler.adapters.kueue.admission_objects import admission_policy
from autoscaler.adapters.kueue.unmodelled import (
    FairSharingRead,
    fair_weight,
    order_unknown,
    read_fair_sharing,
    unmodelled_reasons,
)
from autoscaler.core.errors import ClusterError, Forbidden, NotFound
from autoscaler.domain.kueue_config import KueueConfiguration
from autoscaler.domain.queues.facts import QueueFacts, QueueQuota, Waiter
from autoscaler.domain.queues.fair_sharing import DEFAULT_WEIGHT

Key = tuple[str, str]
VISIBILITY_VERSIONS = ("v1beta2", "v1beta1")  # newest first


class QueueObjects(Protocol):
    def kueue_objects(self, plural: str) -> Sequence[Obj]:
        """Every kueue.x-k8s.io object of `plural` (none when not served); raises
        ClusterError when they cannot be read."""
        ...


@dataclass(frozen=True)
class _Objects:
    cluster_queues: Sequence[Obj]
    local_queues: Sequence[Obj]
    flavors: Mapping[str, Obj]
    cohorts: Mapping[str, Obj]
    workloads: Sequence[Obj]

    @classmethod
    def read(cls, source: QueueObjects) -> _Objects:
        def by_name(plural: str) -> dict[str, Obj]:
            return {str(o["metadata"]["name"]): o for o in source.kueue_objects(plural)}

        return cls(
            cluster_queues=source.kueue_objects("clusterqueues"),
            local_queues=source.kueue_objects("localqueues"),
            flavors=by_name("resourceflavors"),
            cohorts=by_name("cohorts"),
            workloads=source.kueue_objects("workloads"),
        )


@dataclass(frozen=True)
class _Order:
    positions: Mapping[str, Sequence[Key]]  # ClusterQueue -> Workloads in Kueue's order
    source: str
    notes: tuple[str, ...] = ()


class KueueQueues:
    def __init__(
        self,
        *,
        client: KubeClient,
        objects: QueueObjects,
        logger: logging.Logger | None = None,
        configuration: Callable[[], KueueConfiguration | None] | None = None,
    ) -> None:
        """`configuration`: Kueue's Configuration as this cycle read it (None: not read)."""
        self._client = client
        self._objects = objects
        self._log = logger or logging.getLogger(__name__)
        self._configuration = configuration
        self._visibility: ApiResource | None = None
        self._warned: set[str] = set()
        self._fair_said: str | None = None  # the fair-sharing line logged last

    def read_queues(self) -> QueueFacts:
        try:
            objects = _Objects.read(self._objects)
        except (ClusterError, *MALFORMED) as exc:
            self._log.warning("cannot read Kueue's queues: %s", exc)
            return QueueFacts(failure=f"cannot read Kueue's queues: {exc}")
        fair = self._fair_sharing(objects)
        queues = self._quotas(objects, fair)
        pending = self._pending(objects)
        order = self._order(sorted(pending))
        waiters = tuple(
            waiter
            for name in sorted(pending)
            for waiter in _ordered(pending[name], order.positions.get(name, ()))
        )
        return QueueFacts(
            queues=queues,
            waiters=waiters,
            source=order.source,
            notes=(*order.notes, *fair.notes),
            fair_order=fair.order,
        )

    def _fair_sharing(self, objects: _Objects) -> FairSharingRead:
        config = self._configuration() if self._configuration is not None else None
        fair = read_fair_sharing(config, objects.cluster_queues, objects.cohorts.values())
        said = "; ".join(fair.notes) or "fair sharing off"
        if said != (self._fair_said or "fair sharing off"):  # once on, then on each change
            self._log.info("%s", said)
        self._fair_said = said
        return fair

    def _quotas(self, objects: _Objects, fair_sharing: FairSharingRead) -> dict[str, QueueQuota]:
        queues = {}
        fair, afs = fair_sharing.on, fair_sharing.admission
        for obj in objects.cluster_queues:
            try:
                name, cohort, groups, usage = parse.quota_parts(obj, flavors=objects.flavors)
                policy = admission_policy(obj)
                reasons = unmodelled_reasons(
                    obj, flavors=objects.flavors, cohorts=objects.cohorts, cohort=cohort
                )
                unordered = order_unknown(obj, fair_sharing=fair, admission_fair_sharing=afs)
                weight = fair_weight(obj)  # 0 is a weight: never `or` it away
            except MALFORMED as exc:
                self._log.warning("skipping malformed ClusterQueue %s: %s", log_name(obj), exc)
                continue
            queues[name] = QueueQuota(
                name,
                cohort,
                groups,
                usage,
                unmodelled=reasons,
                policy=policy,
                fair_sharing=fair,
                fair_weight=DEFAULT_WEIGHT if weight is None else weight,
                order_unknown=unordered,
            )
        return queues

    def _pending(self, objects: _Objects) -> dict[str, list[Waiter]]:
        """ClusterQueue -> its waiters, unordered."""
        targets = {}
        for obj in objects.local_queues:
            try:
                targets[parse.key_of(obj)] = parse.target_of(obj)
            except MALFORMED as exc:
                self._log.warning("skipping malformed LocalQueue %s: %s", log_name(obj), exc)
        pending: dict[str, list[Waiter]] = defaultdict(list)
        for obj in objects.workloads:
            try:
                if not parse.is_pending(obj):
                    continue
                namespace = str(obj["metadata"]["namespace"])
                queue = targets.get((namespace, queue_name_of(obj)))
                if queue is not None:  # no LocalQueue: Kueue cannot admit it anywhere
                    pending[queue].append(parse.waiter_of(obj, cluster_queue=queue))
            except MALFORMED as exc:
                self._log.warning("skipping malformed pending Workload %s: %s", log_name(obj), exc)
        return pending

    def _order(self, cluster_queues: Sequence[str]) -> _Order:
        if not cluster_queues:
            return _Order({}, "visibility" if self._visibility else "workloads")
        try:
            resource = self._visibility_resource()
            positions = {
                name: parse.visibility_order(self._client.get(resource, name))
                for name in cluster_queues
            }
        except ClusterError as exc:
            self._visibility = None  # discover again next time: it may be installed later
            return _Order({}, "workloads", (self._fallback(exc),))
        return _Order(positions, "visibility")

    def _visibility_resource(self) -> ApiResource:
        if self._visibility is None:
            served = self._client.group_versions(VISIBILITY_GROUP)
            version = next((v for v in VISIBILITY_VERSIONS if v in served), None)
            if version is None:
                raise NotFound(f"{VISIBILITY_GROUP} is not served")
            self._visibility = pending_workloads(version)
        return self._visibility

    def _fallback(self, exc: ClusterError) -> str:
        why = {NotFound: "is not served", Forbidden: "is forbidden"}.get(type(exc), "failed")
        note = (
            f"Kueue's visibility API ({VISIBILITY_GROUP}) {why}: waiters are read from the "
            f"pending Workloads, in Kueue's order (priority, then age)"
        )
        if type(exc) in (NotFound, Forbidden) and why not in self._warned:
            self._warned.add(why)
            self._log.warning("%s (%s)", note, exc)
        elif type(exc) not in (NotFound, Forbidden):
            self._log.warning("%s (%s)", note, exc)
        return note


def _ordered(waiters: Sequence[Waiter], positions: Sequence[Key]) -> list[Waiter]:
    """Those Kueue listed, by position; then the rest by priority (higher first), then age."""
    rank = {key: index for index, key in enumerate(positions)}
    unlisted = len(rank)
    return sorted(
        waiters,
        key=lambda w: (
            rank.get((w.ref.namespace, w.ref.name), unlisted),
            -w.priority,
            w.created_at,
            w.ref,
        ),
    )
