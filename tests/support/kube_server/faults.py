"""The request log tests assert on, and the faults they inject into upcoming requests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import ApiError


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    query: Mapping[str, str]
    content_type: str | None
    body: Any  # parsed JSON, the raw text if it was not JSON, None when empty
    headers: Mapping[str, str] = field(default_factory=dict)  # lower-case names

    @property
    def token(self) -> str | None:
        """The bearer token the client sent, if any."""
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token if scheme.lower() == "bearer" else None

    @property
    def deactivates(self) -> bool:
        """A PATCH setting `spec.active: false` (with whatever annotations come along)."""
        spec = self.body.get("spec") if isinstance(self.body, dict) else None
        return self.method == "PATCH" and spec == {"active": False}

    @property
    def is_watch(self) -> bool:
        return self.query.get("watch") in ("true", "1")

    @property
    def reads_namespaces(self) -> bool:
        """A request on namespaces themselves (/api/v1/namespaces[/name]), not on an object
        in one (/api/v1/namespaces/kueue-system/configmaps): a fault's `when`."""
        return self.path.rstrip("/").count("/") <= 4


class RequestLog:
    def __init__(self) -> None:
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()

    def append(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def all(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def matching(self, method: str | None = None, path_prefix: str = "") -> list[RecordedRequest]:
        return [
            r
            for r in self.all()
            if (method is None or r.method == method) and r.path.startswith(path_prefix)
        ]

    def writes(self) -> list[RecordedRequest]:
        """Everything but GET: what the client changed (or tried to)."""
        return [r for r in self.all() if r.method != "GET"]

    def clear(self) -> None:
        with self._lock:
            self._requests.clear()


@dataclass
class _Failure:
    method: str | None
    path_prefix: str
    status: int
    remaining: int
    retry_after: int | None
    message: str
    when: Callable[[RecordedRequest], bool] | None

    def matches(self, request: RecordedRequest) -> bool:
        return (
            (self.method is None or request.method == self.method)
            and request.path.startswith(self.path_prefix)
            and (self.when is None or self.when(request))
        )


class Faults:
    """Failures to inject; checked for every request before it is served."""

    def __init__(self) -> None:
        self._failures: list[_Failure] = []
        self._expire_watches = 0
        self._lost_answers: list[_Failure] = []
        self._lock = threading.Lock()

    def fail_next(
        self,
        method: str | None = None,
        path_prefix: str = "",
        *,
        status: int,
        times: int = 1,
        retry_after: int | None = None,
        message: str | None = None,
        when: Callable[[RecordedRequest], bool] | None = None,
    ) -> None:
        """Answer the next `times` requests matching method and path prefix (and `when`, if
        given) with a Status of `status`; a 429 carries a Retry-After header of `retry_after`."""
        text = message or f"injected failure {status} from the test"
        with self._lock:
            self._failures.append(
                _Failure(method, path_prefix, status, times, retry_after, text, when)
            )

    def lose_answer_after_applying(
        self,
        method: str | None = None,
        path_prefix: str = "",
        *,
        times: int = 1,
        when: Callable[[RecordedRequest], bool] | None = None,
    ) -> None:
        """Apply the next `times` matching requests, then close the connection without an
        answer: the client cannot tell whether its write happened (a read timeout after the
        server acted, a connection dropped by a proxy)."""
        with self._lock:
            self._lost_answers.append(_Failure(method, path_prefix, 0, times, None, "", when))

    def answer_lost(self, request: RecordedRequest) -> bool:
        """Whether this (applied) request's answer must never be sent."""
        with self._lock:
            lost = next((f for f in self._lost_answers if f.matches(request)), None)
            if lost is None:
                return False
            lost.remaining -= 1
            if lost.remaining <= 0:
                self._lost_answers.remove(lost)
            return True

    def expire_next_watch(self, times: int = 1) -> None:
        """The next `times` watch requests end at once with a 410 ERROR event."""
        with self._lock:
            self._expire_watches += times

    def clear(self) -> None:
        with self._lock:
            self._failures.clear()
            self._lost_answers.clear()
            self._expire_watches = 0

    def check(self, request: RecordedRequest) -> None:
        """Raise the injected ApiError if a pending failure matches this request."""
        with self._lock:
            failure = next((f for f in self._failures if f.matches(request)), None)
            if failure is None:
                return
            failure.remaining -= 1
            if failure.remaining <= 0:
                self._failures.remove(failure)
        retry_after = failure.retry_after
        if failure.status == 429 and retry_after is None:
            retry_after = 1
        raise ApiError(failure.status, failure.message, retry_after=retry_after)

    def take_watch_expiry(self) -> bool:
        with self._lock:
            if self._expire_watches <= 0:
                return False
            self._expire_watches -= 1
            return True
