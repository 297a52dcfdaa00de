"""The workload listing, rendered once per snapshot and filter instead of once per request.

Rendering every row of a thousand-workload fleet (views, validation, JSON) took about 20 ms,
so the listing answered at most about 40 requests a second however many callers waited, and
each one waited behind all the others (issue 18, `benchmarks/bench_rest_load.py`). A listing
changes only when a cycle publishes or when an exemption it shows runs out: a rendering is kept
until then. One lock makes the callers who arrive together after a publish wait for one
rendering instead of each making their own.

A row's reason may name a waiter of another namespace (domain/tenant_names.py): a rendering
is kept per filter and per set of those namespaces the caller may read, so callers with the
same rights share it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime

from autoscaler.api.presenters import snapshot_view, workload_view
from autoscaler.api.schemas.views import WorkloadList, WorkloadView
from autoscaler.domain.models import Snapshot, State, WorkloadStatus
from autoscaler.domain.tenant_names import MayRead, named_by
from autoscaler.domain.usage.assessment import running_unmonitored

RENDERINGS_KEPT = 64  # filters kept per snapshot; beyond it, all are forgotten at once


@dataclass(frozen=True)
class ListingFilter:
    """The listing's query: None keeps every value."""

    namespace: str | None = None
    queue: str | None = None
    state: State | None = None

    def keeps(self, row: WorkloadStatus) -> bool:
        return (
            (self.namespace is None or row.ref.namespace == self.namespace)
            and (self.queue is None or row.info.queue == self.queue)
            and (self.state is None or row.decision.state is self.state)
        )


@dataclass(frozen=True)
class Rendering:
    snapshot: Snapshot | None  # what it renders
    body: bytes  # the WorkloadList's JSON, as the route's response model serializes it
    expires: datetime | None  # when the first exemption it shows runs out; None: never

    def serves(self, snapshot: Snapshot | None, now: datetime) -> bool:
        return snapshot is self.snapshot and (self.expires is None or now < self.expires)


def render(
    snapshot: Snapshot | None, wanted: ListingFilter, *, now: datetime, may_read: MayRead
) -> Rendering:
    if snapshot is None:
        empty = WorkloadList(snapshot=None, items=[])
        return Rendering(None, empty.model_dump_json(by_alias=True).encode(), None)
    rows = [row for row in snapshot.workloads if wanted.keeps(row)]
    gate = snapshot.kueue_gate
    items = [workload_view(row, now=now, gate=gate, may_read=may_read) for row in rows]
    unmonitored = [str(row.ref) for row in rows if running_unmonitored(row.decision)]
    listing = WorkloadList(
        snapshot=snapshot_view(snapshot), items=items, running_unmonitored=unmonitored or None
    )
    return Rendering(
        snapshot, listing.model_dump_json(by_alias=True).encode(), _first_expiry(items)
    )


def _first_expiry(items: list[WorkloadView]) -> datetime | None:
    ends = [i.exemption.until for i in items if i.exemption and i.exemption.until is not None]
    return min(ends, default=None)


# A filter, and the namespaces its rows name elsewhere that the caller may read.
_Key = tuple[ListingFilter, frozenset[str]]


def _named_elsewhere(snapshot: Snapshot | None, wanted: ListingFilter) -> set[str]:
    """The namespaces, other than the filter's own, of the waiters the listed rows name."""
    if snapshot is None or wanted.namespace is None:
        return set()  # a listing of every namespace is read by a reader of every namespace
    return {
        named.ref.namespace
        for row in snapshot.workloads
        if wanted.keeps(row)
        for named in named_by(row.decision)
        if named.ref.namespace != wanted.namespace
    }


def _within(wanted: ListingFilter, readable: frozenset[str]) -> MayRead:
    return lambda namespace: (
        wanted.namespace is None or namespace == wanted.namespace or namespace in readable
    )


class Listings:
    """The latest snapshot's renderings, per filter. Routes run on worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[_Key, Rendering] = {}
        # The namespaces each filter's rows name elsewhere, for one snapshot: a scan of the
        # snapshot once per filter, not per request. One tuple, swapped whole, so a reader
        # never pairs one snapshot with another's sets.
        self._elsewhere: tuple[Snapshot | None, dict[ListingFilter, frozenset[str]]] = (None, {})

    def body(
        self,
        snapshot: Snapshot | None,
        wanted: ListingFilter,
        *,
        now: datetime,
        may_read: MayRead,
    ) -> bytes:
        """The listing's JSON for `snapshot` (the latest) as seen at `now`, by a caller who
        may read the namespaces `may_read` says (beyond the filter's, asked already)."""
        readable = frozenset(filter(may_read, self._named_elsewhere(snapshot, wanted)))
        key = (wanted, readable)
        found = self._kept.get(key)
        if found is not None and found.serves(snapshot, now):
            return found.body
        with self._lock:  # the callers who missed together wait for one rendering
            found = self._kept.get(key)
            if found is None or not found.serves(snapshot, now):
                found = render(snapshot, wanted, now=now, may_read=_within(wanted, readable))
                self._keep(key, found)
            return found.body

    def _named_elsewhere(self, snapshot: Snapshot | None, wanted: ListingFilter) -> frozenset[str]:
        of, sets = self._elsewhere
        if of is not snapshot or len(sets) >= RENDERINGS_KEPT:
            sets = {}
            self._elsewhere = (snapshot, sets)
        found = sets.get(wanted)
        if found is None:
            found = sets[wanted] = frozenset(_named_elsewhere(snapshot, wanted))
        return found

    def _keep(self, wanted: _Key, rendering: Rendering) -> None:
        stale = any(kept.snapshot is not rendering.snapshot for kept in self._kept.values())
        if stale or len(self._kept) >= RENDERINGS_KEPT:
            self._kept = {}  # a new snapshot: the older renderings will not serve again
        self._kept[wanted] = rendering
