"""The `ClusterReader` port over Kueue and RayClusters (ISSUE 17): Kueue's rows, and a row of
its own for each RayCluster no Kueue Workload admits, read only while a suspend actuator is
enabled. Whose a RayCluster is, `domain.claims.claim` decides; each claim is logged once per
change. Before acting, `get_workload` re-claims a RayCluster from a fresh read, the
Workloads of its namespace listed then: a Workload created since makes it Kueue's, and it is
not ours to suspend. A RayCluster named as a Workload of its namespace is reported and left
alone: a request or an action naming the two would reach the Workload.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from autoscaler.adapters.kuberay.admissions import Admissions
from autoscaler.adapters.kuberay.rayclusters import RayPod, parse_raycluster
from autoscaler.adapters.kuberay.source import RayClusterSource
from autoscaler.adapters.kubernetes import objects
from autoscaler.adapters.kubernetes.cache import key_of
from autoscaler.adapters.kubernetes.objects import MALFORMED, Obj
from autoscaler.adapters.kueue.cluster import KueueCluster
from autoscaler.adapters.kueue.context import UNLISTED, NamespaceMeta
from autoscaler.domain.models import Pauses, PodRecord, State, WorkloadInfo, WorkloadRef
from autoscaler.domain.policy.claims import Claim, RayClusterFacts, claim
from autoscaler.domain.policy.management import SUSPENDED_BY_US, HandsOff, Manager


class FleetReader:
    def __init__(
        self,
        *,
        kueue: KueueCluster,
        rayclusters: RayClusterSource,
        enabled: frozenset[Manager],
        logger: logging.Logger | None = None,
    ) -> None:
        """`enabled`: the managers whose actuators are on; RayClusters are read only when a
        suspend actuator (KAI, KubeRay) is among them."""
        self._kueue = kueue
        self._rayclusters = rayclusters
        self._enabled = enabled
        self._log = logger or logging.getLogger(__name__)
        self._claims: dict[WorkloadRef, str] = {}  # the last claim logged for each RayCluster
        self._lock = threading.Lock()

    @property
    def rayclusters(self) -> RayClusterSource:
        return self._rayclusters

    @property
    def reads_rayclusters(self) -> bool:
        return bool(self._enabled & SUSPENDED_BY_US)

    def list_workloads(self) -> list[WorkloadInfo]:
        rows = list(self._kueue.list_workloads())
        if not self.reads_rayclusters:
            return rows
        read = self._rayclusters.read()  # before the Workloads: a newer Workload still counts
        admissions = Admissions.of(self._kueue.kueue_objects("workloads"))
        namespaces = self._kueue.namespace_meta()
        claimed = [(obj, c) for obj in read.clusters if (c := self._read_claim(obj, admissions))]
        self._log_claims(claimed)
        workloads = {row.ref for row in rows}
        for obj, found in claimed:
            meta = _namespace(namespaces, obj)
            row = self._row(obj, found, pods=read.pods_of(*key_of(obj)), namespace=meta)
            rows += [_apart_from(workloads, row)] if row is not None else []
        return rows

    def get_workload(self, ref: WorkloadRef) -> WorkloadInfo | None:
        """The Workload; else the RayCluster of that name, re-claimed from a fresh read."""
        found = self._kueue.get_workload(ref)
        if found is not None or not self.reads_rayclusters:
            return found
        obj, pods = self._rayclusters.read_one(ref)
        if obj is None:
            return None
        admissions = Admissions.of(self._kueue.workloads_in(ref.namespace))
        fresh = self._claim(obj, admissions)
        if fresh.manager is None and not fresh.owned_elsewhere:
            self._log.info("raycluster %s: %s (read now: not ours to suspend)", ref, fresh.reason)
            return None
        namespace = self._kueue.namespace_now(ref.namespace)
        return self._row(obj, fresh, pods=pods, namespace=namespace)

    def namespace_exists(self, name: str) -> bool:
        return self._kueue.namespace_exists(name)

    def list_gpu_pods(self) -> Sequence[PodRecord]:
        return self._kueue.list_gpu_pods()

    def list_scaled_objects(self) -> Sequence[Mapping[str, Any]]:
        return self._kueue.list_scaled_objects()

    def read_pauses(self) -> Pauses:
        return self._kueue.read_pauses()

    def _claim(self, obj: Obj, admissions: Admissions) -> Claim:
        facts = RayClusterFacts(
            labels=objects.labels_of(obj),
            annotations=objects.annotations_of(obj),
            controller=objects.controller_owner(obj),
            admitting_workload=admissions.admitting(obj),
        )
        return claim(facts, enabled=self._enabled)

    def _read_claim(self, obj: Obj, admissions: Admissions) -> Claim | None:
        try:
            return self._claim(obj, admissions)
        except MALFORMED as exc:
            self._log.warning("skipping malformed raycluster %s: %s", _ref(obj), exc)
            return None

    def _row(
        self, obj: Obj, found: Claim, *, pods: Iterable[RayPod], namespace: NamespaceMeta | None
    ) -> WorkloadInfo | None:
        """A row when the RayCluster is ours to suspend or owned elsewhere (reported)."""
        if found.manager is None and not found.owned_elsewhere:
            return None  # Kueue's (its Workload is the row) or an actuator not enabled
        try:
            return parse_raycluster(obj, pods=pods, claim=found, namespace=namespace)
        except MALFORMED as exc:
            self._log.warning("skipping malformed raycluster %s: %s", _ref(obj), exc)
            return None

    def _log_claims(self, claimed: Iterable[tuple[Obj, Claim]]) -> None:
        """Each RayCluster's claim, once per change (and once when first seen)."""
        now = {_ref(obj): _claim_text(found) for obj, found in claimed}
        with self._lock:
            changed = {ref: text for ref, text in now.items() if self._claims.get(ref) != text}
            self._claims = now  # a RayCluster gone is forgotten
        for ref, text in sorted(changed.items()):
            self._log.info("raycluster %s: %s", ref, text)


def _apart_from(workloads: Collection[WorkloadRef], row: WorkloadInfo) -> WorkloadInfo:
    """The row, left alone when a Workload has its name: REST and the act sequence look a
    name up as a Workload first, so acting on it would write the wrong object."""
    if row.ref not in workloads or row.hands_off is not None:
        return row
    why = f"shares its name with Workload {row.ref.name}: left alone"
    return replace(row, hands_off=HandsOff(State.PROTECTED, why))


def _claim_text(found: Claim) -> str:
    if found.manager is not None:
        return f"{found.reason} (suspend actuator)"
    if found.owned_elsewhere:
        return f"{found.reason} (reported, never suspended)"
    return f"{found.reason} (no row of its own)"


def _ref(obj: Obj) -> WorkloadRef:
    return WorkloadRef(*key_of(obj))


def _namespace(namespaces: Mapping[str, NamespaceMeta] | None, obj: Obj) -> NamespaceMeta | None:
    return None if namespaces is None else namespaces.get(key_of(obj)[0], UNLISTED)
