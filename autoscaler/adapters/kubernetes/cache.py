"""A watch-based cache of one resource over KubeClient: list once, then watch.

    cache = WatchCache(client=client, resource=PODS, settings=settings.watch_cache,
                       convert=parse, logger=log)
    cache.start(); cache.wait_synced(30.0); cache.items(); cache.stop()

One thread per cache. It lists, then watches from the list's resourceVersion; when the
server ends a stream (timeout, restart, load balancer), KubeClient reopens it from the last
version seen, so a steady cache makes no list call. A 410 Gone (WatchExpired) means the
history it would resume from is gone: list again at once and swap the contents. Any other
error waits (exponential backoff with jitter, at least the server's Retry-After) and lists
again, which proves the connection and that no change was missed; until then the cache
reports itself failing, and readers treat that as an outage.
"""

from __future__ import annotations

import logging
import random
import re
import threading
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Generic, TypeVar, cast

from autoscaler.adapters.kubernetes.client import KubeClient
from autoscaler.adapters.kubernetes.resources import ApiResource, Obj
from autoscaler.adapters.kubernetes.watching import WatchEvent, WatchInterrupt
from autoscaler.core.errors import ClusterError, ClusterUnavailable, NotFound, WatchExpired
from autoscaler.settings.ha import WatchCacheSettings

T = TypeVar("T")
V = TypeVar("V")
Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects

_RETRY_AFTER = re.compile(r"\(retry after (\d+(?:\.\d+)?)s\)")


class CacheStopped(Exception):
    """Raised inside the cache's own thread once it is told to stop."""


@dataclass(frozen=True)
class _Interruptible(ApiResource):
    """The cached resource, refusing to give its path once the cache stops.

    A stopping cache ends its open stream through its `WatchInterrupt`; refusing the path as
    well means no list or watch request is sent once it stops, whatever it was doing.
    """

    stopping: threading.Event = field(default_factory=threading.Event, compare=False, repr=False)

    def path(self, *, namespace: str | None = None, name: str | None = None) -> str:
        if self.stopping.is_set():
            raise CacheStopped(f"{self} cache stopped")
        return super().path(namespace=namespace, name=name)


def retry_after(error: BaseException) -> float | None:
    """The Retry-After (seconds) KubeClient put in a 429/5xx error's message, if any."""
    found = _RETRY_AFTER.search(str(error))
    return float(found.group(1)) if found else None


def retry_delay(
    attempt: int, *, error: BaseException, initial: float, maximum: float, jitter: float
) -> float:
    """Seconds to wait before attempt `attempt + 1`: `initial` doubled per failure, capped at
    `maximum`, scaled into its upper half by `jitter` (0..1) so replicas spread out, and never
    shorter than the server's Retry-After (itself capped at `maximum`)."""
    ceiling = min(maximum, initial * 2.0 ** max(attempt - 1, 0))
    delay = ceiling * (0.5 + jitter / 2)
    hinted = retry_after(error)
    return max(delay, min(hinted, maximum)) if hinted is not None else delay


def key_of(obj: Mapping[str, Any]) -> Key:
    """(namespace, name), "" for either when missing: how caches and readers key objects."""
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def without_managed_fields(obj: Obj) -> Obj:
    """The object minus metadata.managedFields, often its largest and never read here."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


class WatchCache(Generic[T]):
    """One resource's objects, as `convert` makes them, kept current.

    `convert` returns None for an object not worth keeping, and must not raise: it handles
    (logs and drops) a malformed object itself.
    """

    def __init__(
        self,
        *,
        client: KubeClient,
        resource: ApiResource,
        settings: WatchCacheSettings,
        convert: Callable[[Obj], T | None],
        logger: logging.Logger,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        missing_is_empty: bool = False,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self._stop = threading.Event()
        self._interrupt = WatchInterrupt()
        self._resource = _Interruptible(
            resource.group, resource.version, resource.plural, resource.namespaced, self._stop
        )
        self._client = client
        self._settings = settings
        self._convert = convert
        self._log = logger
        self._namespace = namespace
        self._selector = label_selector
        self._fields = field_selector
        self._missing_is_empty = missing_is_empty  # a 404 list: the CRD is not installed
        self._jitter = jitter
        self._lock = threading.Lock()
        self._items: dict[Key, T] = {}
        self._changes = 0  # counts the changes of `_items`: a `view` is derived again then
        self._views: dict[Callable[[Mapping[Key, T]], Any], tuple[int, Any]] = {}
        self._version = ""
        self._synced = threading.Event()
        self._settled = threading.Event()  # synced, or an attempt failed: no point waiting
        self._failing: str | None = None
        self._thread = threading.Thread(
            target=self._run, name=f"watch-cache-{resource}", daemon=True
        )

    @property
    def name(self) -> str:
        return str(self._resource)

    @property
    def synced(self) -> bool:
        """True once the first list is in; stays true while a relist is under way."""
        return self._synced.is_set()

    @property
    def failing(self) -> str | None:
        """Why the cache may be missing changes right now (None when it is following)."""
        with self._lock:
            return self._failing

    @property
    def resource_version(self) -> str:
        with self._lock:
            return self._version

    def items(self) -> tuple[T, ...]:
        """A consistent snapshot. The values are shared: readers must not mutate them."""
        with self._lock:
            return tuple(self._items.values())

    def snapshot(self) -> dict[Key, T]:
        """A consistent copy of the contents by (namespace, name)."""
        with self._lock:
            return dict(self._items)

    def view(self, derive: Callable[[Mapping[Key, T]], V]) -> V:
        """`derive` of the contents by (namespace, name), derived again only once they
        changed: a reader asking every cycle pays once per change, not once per cycle.
        `derive` keys the memo (pass the same function each time) and must not keep its
        argument; the result is shared: readers must not mutate it."""
        with self._lock:
            memo = self._views.get(derive)
            if memo is None or memo[0] != self._changes:
                memo = self._views[derive] = (self._changes, derive(self._items))
            return cast(V, memo[1])

    def start(self) -> None:
        self._thread.start()

    def wait_synced(self, timeout: float) -> bool:
        """Wait for the first list, or for an attempt to fail; True when synced."""
        self._settled.wait(timeout)
        return self.synced

    def stop(self, timeout: float | None = None) -> bool:
        """Stop following and join the thread (within `timeout` seconds when given): the
        stream being read is ended at once. True when the thread ended."""
        self._stop.set()
        self._interrupt.fire()
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        attempt, listed = 0, False
        while not self._stop.is_set():
            try:
                if not listed:
                    self._relist()
                    listed, attempt = True, 0
                self._follow()
            except CacheStopped:
                return
            except Exception as exc:  # the throttling boundary of this thread: log, wait, relist
                attempt += 1
                listed = False
                if self._stop.wait(self._wait_after(exc, attempt)):
                    return

    def _wait_after(self, exc: Exception, attempt: int) -> float:
        if isinstance(exc, NotFound) and self._missing_is_empty:
            if attempt == 1:  # once per absence, not every look
                self._log.info("%s is not served; looking again every backoffMax", self.name)
            return self._settings.backoff_max.total_seconds()
        if isinstance(exc, WatchExpired) and attempt == 1:
            self._log.info("%s watch expired; listing again", self.name)
            return 0.0
        delay = retry_delay(
            attempt,
            error=exc,
            initial=self._settings.backoff_initial.total_seconds(),
            maximum=self._settings.backoff_max.total_seconds(),
            jitter=self._jitter(),
        )
        with self._lock:
            self._failing = f"{self.name} cache failing: {exc}"
        self._settled.set()
        # An API error is expected and a warning; anything else is a bug worth a traceback.
        log = self._log.warning if isinstance(exc, ClusterError) else self._log.exception
        log("%s cache: %s; listing again in %.1fs (attempt %d)", self.name, exc, delay, attempt)
        return delay

    def _relist(self) -> None:
        try:
            listed = self._client.list_objects(
                self._resource,
                namespace=self._namespace,
                label_selector=self._selector,
                field_selector=self._fields,
            )
        except NotFound:
            if not self._missing_is_empty:
                raise
            self._replace({}, version="")
            raise
        converted = ((key_of(obj), self._convert(obj)) for obj in listed.items)
        kept = {key: value for key, value in converted if value is not None}
        self._replace(kept, version=listed.resource_version)

    def _replace(self, items: dict[Key, T], *, version: str) -> None:
        with self._lock:
            self._items, self._version, self._failing = items, version, None
            self._changes += 1
        self._synced.set()
        self._settled.set()

    def _follow(self) -> None:
        # KubeClient.watch is a generator: closing it releases the connection at once.
        events = cast(
            Generator[WatchEvent, None, None],
            self._client.watch(
                self._resource,
                resource_version=self.resource_version,
                namespace=self._namespace,
                label_selector=self._selector,
                field_selector=self._fields,
                timeout_seconds=int(self._settings.watch_timeout.total_seconds()),
                interrupt=self._interrupt,
            ),
        )
        try:
            for event in events:
                self._apply(event)
                if self._stop.is_set():
                    raise CacheStopped(f"{self.name} cache stopped")
        finally:
            events.close()

    def _apply(self, event: WatchEvent) -> None:
        key = key_of(event.object)
        value = None if event.type == "DELETED" else self._convert(event.object)
        version = str((event.object.get("metadata") or {}).get("resourceVersion") or "")
        with self._lock:
            if value is None:
                self._items.pop(key, None)
            else:
                self._items[key] = value
            self._changes += 1
            self._version = version or self._version


def require_fresh(caches: Iterable[WatchCache[Any]], wait: timedelta) -> None:
    """Wait (up to `wait` each) for a first list; ClusterUnavailable unless each cache is
    following: a reader never answers from a cache that may have missed a change."""
    for cache in caches:
        synced = cache.wait_synced(wait.total_seconds())
        if (problem := cache.failing) is not None:
            raise ClusterUnavailable(problem)
        if not synced:
            raise ClusterUnavailable(f"the {cache.name} cache is not filled yet")


def not_following(cache: WatchCache[Any], wait: timedelta) -> str | None:
    """Why an optional cache cannot be read now (failing, or no first list within `wait`);
    None when it is following: `require_fresh`'s counterpart for caches a cycle does
    without."""
    synced = cache.wait_synced(wait.total_seconds())
    if not synced or cache.failing is not None:
        return cache.failing or "not listed yet"
    return None


def stop_all(caches: Sequence[WatchCache[Any]], timeout: timedelta | None = None) -> bool:
    """Tell every cache to stop first (each may be waiting out a quiet watch), then join
    them; True when all threads ended."""
    for cache in caches:
        cache.stop(timeout=0)
    seconds = timeout.total_seconds() if timeout is not None else None
    return all([cache.stop(timeout=seconds) for cache in caches])
