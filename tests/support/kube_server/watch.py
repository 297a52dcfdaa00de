"""One watch request as a generator of events (dicts), independent of HTTP.

Without a resourceVersion (or with "0") the watch starts with a synthetic ADDED per existing
object, like the API server. With one, it replays history after it, or ends with an ERROR event
carrying a 410 Expired Status when that history is gone. An object that stops matching the
selectors is reported as DELETED, one that starts matching as ADDED.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .catalog import ResourceType
from .errors import ApiError
from .objects import Change, Object
from .store import Store

Event = dict[str, Any]


@dataclass(frozen=True)
class WatchRequest:
    resource: ResourceType
    api_version: str
    matches: Callable[[Mapping[str, Any]], bool]
    resource_version: int | None = None  # None: start with ADDED for what exists now
    timeout_s: float | None = None
    bookmarks: bool = False
    bookmark_interval_s: float | None = None


def _as_served(obj: Object, api_version: str) -> Object:
    return {**obj, "apiVersion": api_version}


def _event_for(change: Change, request: WatchRequest) -> Event | None:
    if change.resource.key != request.resource.key:
        return None
    if change.type == "DELETED":
        kind_of_event = "DELETED" if request.matches(change.object) else None
    else:
        was = change.old is not None and request.matches(change.old)
        kind_of_event = {
            (True, True): "MODIFIED",
            (False, True): "ADDED",
            (True, False): "DELETED",
        }.get((was, request.matches(change.object)))
    if kind_of_event is None:
        return None
    return {"type": kind_of_event, "object": _as_served(change.object, request.api_version)}


def _bookmark(request: WatchRequest, resource_version: int) -> Event:
    return {
        "type": "BOOKMARK",
        "object": {
            "kind": request.resource.kind,
            "apiVersion": request.api_version,
            "metadata": {"resourceVersion": str(resource_version)},
        },
    }


def error_event(error: ApiError) -> Event:
    return {"type": "ERROR", "object": error.status()}


def _start(store: Store, request: WatchRequest) -> tuple[int, list[Event]]:
    """The resourceVersion to stream after, and the events to send first."""
    if request.resource_version is not None:
        return request.resource_version, []
    revision, everything = store.snapshot(request.resource)
    existing = [obj for obj in everything if request.matches(obj)]
    return revision, [
        {"type": "ADDED", "object": _as_served(obj, request.api_version)} for obj in existing
    ]


def watch_events(
    store: Store, request: WatchRequest, *, force_gone: bool = False
) -> Iterator[Event]:
    """Events until the timeout, a watch drop or server close; an ERROR event ends it early."""
    epoch = store.watch_epoch
    deadline = time.monotonic() + request.timeout_s if request.timeout_s else None
    if force_gone:
        yield error_event(ApiError(410, "too old resource version (forced by the test)"))
        return
    cursor, initial = _start(store, request)
    yield from initial
    next_bookmark = _next_bookmark(request)
    while store.watch_epoch == epoch:
        try:
            changes = store.changes_after(cursor)
        except ApiError as expired:
            yield error_event(expired)
            return
        for change in changes:
            cursor = change.resource_version
            if (event := _event_for(change, request)) is not None:
                yield event
        if next_bookmark is not None and time.monotonic() >= next_bookmark:
            yield _bookmark(request, cursor)
            next_bookmark = _next_bookmark(request)
        if deadline is not None and time.monotonic() >= deadline:
            break
        store.wait_for_change(
            after=cursor, epoch=epoch, timeout=_seconds_until(deadline, next_bookmark)
        )
    if request.bookmarks and store.watch_epoch == epoch:
        yield _bookmark(request, cursor)


def _next_bookmark(request: WatchRequest) -> float | None:
    if not (request.bookmarks and request.bookmark_interval_s):
        return None
    return time.monotonic() + request.bookmark_interval_s


def _seconds_until(*moments: float | None) -> float:
    """Time to sleep until the nearest of `moments`; long when there is none (writes wake us)."""
    known = [moment for moment in moments if moment is not None]
    return min(known) - time.monotonic() if known else 3600.0
