"""The object store: one global resourceVersion counter and a bounded event history, like etcd.

Writes that come over HTTP go through `create`/`replace`/`patch`/`delete`, which keep the API
server's rules (409 on a stale resourceVersion, status only through the status subresource,
generation bumped on spec changes, no event for a no-op write). `put` is the back door for test
setup and emulated controllers: it upserts an object as given, status included, with no checks.
Every committed write is published to `on_change` listeners after the store lock is released,
so a listener may write to the store itself.
"""

from __future__ import annotations

import builtins
import copy
import threading
import uuid
from collections import deque
from collections.abc import Callable
from datetime import datetime

from .catalog import Catalog, ResourceType
from .errors import already_exists, conflict, gone, not_found, uid_precondition_failed
from .objects import (
    Admit,
    Change,
    Object,
    format_time,
    name_from_generate_name,
    updated_object,
    version_required,
)
from .patches import merge_patch
from .selectors import object_filter


class Store:
    def __init__(
        self, catalog: Catalog, *, clock: Callable[[], datetime], history_limit: int = 1000
    ) -> None:
        self._catalog = catalog
        self._clock = clock
        self._objects: dict[tuple[str, str, str], Object] = {}
        self._history: deque[Change] = deque(maxlen=history_limit)
        self._compacted = 0  # events at or below this resourceVersion can no longer be replayed
        self._revision = 0
        self._watch_epoch = 0
        self._closed = False
        self._listeners: list[Callable[[Change], None]] = []
        self._cond = threading.Condition(threading.RLock())

    # -- reads ---------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self._cond:
            return self._revision

    def resource(self, resource: ResourceType | str) -> ResourceType:
        return resource if isinstance(resource, ResourceType) else self._catalog.by_key(resource)

    def get(
        self, resource: ResourceType | str, *, name: str, namespace: str | None = None
    ) -> Object:
        kind = self.resource(resource)
        with self._cond:
            return copy.deepcopy(self._require(kind, namespace, name))

    def list(
        self,
        resource: ResourceType | str,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Object]:
        """Matching objects sorted by namespace and name."""
        kind = self.resource(resource)
        matches = object_filter(
            namespace=namespace, label_selector=label_selector, field_selector=field_selector
        )
        with self._cond:
            found = [
                obj
                for (key, ns, name), obj in sorted(self._objects.items())
                if key == kind.key and matches(obj)
            ]
            return copy.deepcopy(found)

    def snapshot(
        self, resource: ResourceType | str, **selectors: str | None
    ) -> tuple[int, builtins.list[Object]]:
        """The current resourceVersion and `list(resource, **selectors)`, read atomically."""
        with self._cond:
            return self._revision, self.list(resource, **selectors)

    # -- writes with API server semantics -------------------------------------------------------

    def create(
        self, resource: ResourceType | str, obj: Object, *, admit: Admit | None = None
    ) -> Object:
        kind = self.resource(resource)
        new = copy.deepcopy(obj)
        meta = new.setdefault("metadata", {})
        name_from_generate_name(kind, meta)
        if kind.status_subresource:
            new.pop("status", None)
        with self._cond:
            if self._find(kind, meta.get("namespace"), meta["name"]) is not None:
                raise already_exists(kind, meta["name"])
            now = format_time(self._clock())
            meta.update(uid=str(uuid.uuid4()), creationTimestamp=now, generation=1)
            change = self._commit("ADDED", kind, admit(new, None) if admit else new, None)
        return self._publish(change)

    def replace(
        self,
        resource: ResourceType | str,
        obj: Object,
        *,
        subresource: str | None = None,
        admit: Admit | None = None,
    ) -> Object:
        kind = self.resource(resource)
        meta = obj.get("metadata", {})
        with self._cond:
            old = self._require(kind, meta.get("namespace"), meta.get("name", ""))
            given = meta.get("resourceVersion")
            if given != old["metadata"]["resourceVersion"] and (given or kind.crd):
                raise conflict(kind, meta["name"]) if given else version_required(kind, meta)
            change = self._update(kind, old, copy.deepcopy(obj), subresource, admit)
        return self._publish(change) if change else copy.deepcopy(old)

    def patch(
        self,
        resource: ResourceType | str,
        *,
        name: str,
        patch: Object,
        namespace: str | None = None,
        subresource: str | None = None,
        admit: Admit | None = None,
    ) -> Object:
        """Apply a JSON merge patch; a resourceVersion inside the patch is a precondition."""
        kind = self.resource(resource)
        with self._cond:
            old = self._require(kind, namespace, name)
            expected = (patch.get("metadata") or {}).get("resourceVersion")
            if expected is not None and expected != old["metadata"]["resourceVersion"]:
                raise conflict(kind, name)
            change = self._update(kind, old, merge_patch(old, patch), subresource, admit)
        return self._publish(change) if change else copy.deepcopy(old)

    def delete(
        self,
        resource: ResourceType | str,
        *,
        name: str,
        namespace: str | None = None,
        uid: str | None = None,
    ) -> Object:
        """`uid`: DeleteOptions.preconditions.uid, a 409 when the object is another one now.
        Nothing the object owns is collected (the API server's garbage collector would)."""
        kind = self.resource(resource)
        with self._cond:
            old = self._require(kind, namespace, name)
            if uid is not None and uid != old["metadata"].get("uid"):
                raise uid_precondition_failed(kind, name, expected=uid, found=old["metadata"])
            change = self._commit("DELETED", kind, copy.deepcopy(old), old)
        return self._publish(change)

    def delete_namespace(self, namespace: str) -> int:
        """Delete every object in `namespace`, as deleting the Namespace would (a test cleaning
        up after itself on the shared server); how many there were."""
        with self._cond:
            found = [(key, name) for key, ns, name in self._objects if ns == namespace]
        for key, name in found:  # each published after the lock is released, as any write
            self.delete(key, name=name, namespace=namespace)
        return len(found)

    # -- test back door ------------------------------------------------------------------------

    def put(self, obj: Object) -> Object:
        """Create or overwrite `obj` as given (status too), filling uid, creationTimestamp and
        generation only when absent. No resourceVersion check, no admission."""
        kind = self._catalog.by_api_version(obj["apiVersion"], obj["kind"])
        new = copy.deepcopy(obj)
        meta = new["metadata"]
        with self._cond:
            old = self._find(kind, meta.get("namespace"), meta["name"])
            meta.setdefault("uid", old["metadata"]["uid"] if old else str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", format_time(self._clock()))
            meta.setdefault("generation", old["metadata"].get("generation", 1) if old else 1)
            change = self._commit("MODIFIED" if old else "ADDED", kind, new, old)
        return self._publish(change)

    def on_change(self, listener: Callable[[Change], None]) -> Callable[[], None]:
        """Call `listener` after every committed write; returns a function that unsubscribes."""
        with self._cond:
            self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    # -- watch support -------------------------------------------------------------------------

    def changes_after(self, resource_version: int) -> builtins.list[Change]:
        """Events newer than `resource_version`; 410 Expired once they fell out of the history."""
        with self._cond:
            if resource_version < self._compacted:
                raise gone(resource_version, self._compacted + 1)
            return [c for c in self._history if c.resource_version > resource_version]

    def wait_for_change(self, *, after: int, epoch: int, timeout: float) -> None:
        """Block until a write newer than `after`, a watch drop, close(), or the timeout."""
        with self._cond:
            self._cond.wait_for(
                lambda: self._revision > after or self._watch_epoch != epoch or self._closed,
                timeout=max(timeout, 0.0),
            )

    @property
    def watch_epoch(self) -> int:
        """Changes whenever open watches must end (drop_watches or close)."""
        with self._cond:
            return -1 if self._closed else self._watch_epoch

    def drop_watches(self) -> None:
        with self._cond:
            self._watch_epoch += 1
            self._cond.notify_all()

    def compact(self) -> None:
        """Forget the history, so resuming a watch from any older resourceVersion gets 410."""
        with self._cond:
            self._compacted = self._revision
            self._history.clear()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # -- internals -----------------------------------------------------------------------------

    def _find(self, kind: ResourceType, namespace: str | None, name: str) -> Object | None:
        return self._objects.get((kind.key, namespace or "", name))

    def _require(self, kind: ResourceType, namespace: str | None, name: str) -> Object:
        found = self._find(kind, namespace, name)
        if found is None:
            raise not_found(kind, name)
        return found

    def _update(
        self,
        kind: ResourceType,
        old: Object,
        new: Object,
        subresource: str | None,
        admit: Admit | None,
    ) -> Change | None:
        new = updated_object(kind, old, new, subresource)
        new = admit(new, old) if admit else new
        return None if new == old else self._commit("MODIFIED", kind, new, old)

    def _commit(
        self, kind_of_change: str, kind: ResourceType, new: Object, old: Object | None
    ) -> Change:
        self._revision += 1
        new["metadata"]["resourceVersion"] = str(self._revision)
        key = (kind.key, new["metadata"].get("namespace") or "", new["metadata"]["name"])
        if kind_of_change == "DELETED":
            del self._objects[key]
        else:
            self._objects[key] = new
        if len(self._history) == self._history.maxlen:
            self._compacted = self._history[0].resource_version
        change = Change(
            kind_of_change, kind, copy.deepcopy(new), copy.deepcopy(old), self._revision
        )
        self._history.append(change)
        self._cond.notify_all()
        return change

    def _publish(self, change: Change) -> Object:
        for listener in list(self._listeners):
            listener(copy.deepcopy(change))
        return copy.deepcopy(change.object)
