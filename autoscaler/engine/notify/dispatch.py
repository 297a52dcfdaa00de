"""Sends notifications off the caller's thread, one lane per target (ISSUE 15).

`submit` only queues: the loop and the API never wait on a receiver. Each target has its
own bounded queue and worker thread, so a receiver that hangs delays only its own
deliveries (each bounded by the target's timeout), never another target's and never the
caller. A full lane drops the notification and counts it: the Kubernetes Event and the
annotations still tell, and the next cycle's state is read back from them anyway.

Retries back off exponentially (doubling, capped) and only when the notifier says another
try may help (`NotifyError.retry`). The wait is an injected callable, by default the stop
event's wait, so `stop()` interrupts a backoff and tests never sleep.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Protocol

from prometheus_client import CollectorRegistry

from autoscaler.core.errors import NotifyError
from autoscaler.core.ports import Notifier
from autoscaler.domain.notices.notifications import Link, Notification
from autoscaler.engine.notify.lanes import Lane
from autoscaler.engine.notify.metrics import (
    DROPPED,
    FAILED,
    SENT,
    UNKNOWN_TARGET,
    NotificationMetrics,
)

LinkMaker = Callable[[Notification, str], Sequence[Link]]
Wait = Callable[[float], bool]  # waits up to so many seconds; True: stop waiting, give up


class RetryValues(Protocol):
    """What `notifications.retry` says; settings.notifications.RetrySettings fits."""

    @property
    def attempts(self) -> int: ...
    @property
    def initial_backoff(self) -> timedelta: ...
    @property
    def max_backoff(self) -> timedelta: ...


def backoffs(retry: RetryValues) -> tuple[float, ...]:
    """The waits before each retry, in seconds: the first, doubled each time, capped."""
    first, cap = retry.initial_backoff.total_seconds(), retry.max_backoff.total_seconds()
    return tuple(min(first * 2**n, cap) for n in range(retry.attempts - 1))


class NotificationDispatcher:
    """A `NotificationSink`; started and stopped with the service like a `Server`."""

    def __init__(
        self,
        notifiers: Mapping[str, Notifier],
        *,
        links: LinkMaker | None,
        registry: CollectorRegistry,
        retry: RetryValues,
        queue_limit: int,
        logger: logging.Logger,
        wait: Wait | None = None,
        drain: timedelta = timedelta(seconds=5),
    ) -> None:
        self._notifiers = dict(notifiers)
        self._links = links
        self._metrics = NotificationMetrics(registry)
        self._backoffs = backoffs(retry)
        self._log = logger
        self._stopping = threading.Event()
        self._wait = wait or self._stopping.wait
        self._drain = drain.total_seconds()
        self._deadline: float | None = None
        self._lanes = {name: Lane(name, limit=queue_limit) for name in self._notifiers}
        self._threads: list[threading.Thread] = []

    def submit(self, notification: Notification, *, targets: Sequence[str]) -> None:
        """Queue it for each named target and return at once; never raises."""
        for target in targets:
            try:
                self._offer(notification, target)
            except Exception:  # the one broad catch: the caller must never see a failure here
                self._log.exception("notification to %s not queued", target)

    def start(self) -> None:
        for name, lane in self._lanes.items():
            thread = threading.Thread(
                target=self._work, args=(lane,), name=f"notify-{name}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Deliver what is queued (no more retries) until the drain deadline, then drop the
        rest, counted. Workers are daemons: one stuck in a receiver's timeout is left."""
        self._deadline = time.monotonic() + self._drain
        self._stopping.set()
        for lane in self._lanes.values():
            lane.close()
        for thread in self._threads:
            thread.join(max(0.0, self._deadline - time.monotonic()))
        self._threads = []

    def _offer(self, notification: Notification, target: str) -> None:
        lane = self._lanes.get(target)
        if lane is None:
            self._metrics.count(UNKNOWN_TARGET, target=None, kind=notification.kind)
            self._log.warning(
                "notification target %r is not in notifications.targets; not sent",
                target,
                extra=_fields(notification, target),
            )
        elif not lane.offer(notification):
            self._metrics.count(DROPPED, target=target, kind=notification.kind)
            self._log.warning(
                "notification queue for %s is full; dropped",
                target,
                extra=_fields(notification, target),
            )

    def _work(self, lane: Lane) -> None:
        while (notification := lane.take()) is not None:
            if self._deadline is not None and time.monotonic() > self._deadline:
                self._metrics.count(DROPPED, target=lane.name, kind=notification.kind)
                continue
            self._deliver(notification, target=lane.name)

    def _deliver(self, notification: Notification, *, target: str) -> None:
        notifier, links = self._notifiers[target], self._links_for(notification, target)
        for retry, backoff in enumerate((0.0, *self._backoffs)):
            if retry:
                if self._stopping.is_set() or self._wait(backoff):  # stopping: no more retries
                    break
                self._metrics.retried(target)
            last = retry == len(self._backoffs)
            error = self._attempt(notifier, notification, links=links, target=target, last=last)
            if error is None:
                self._metrics.count(SENT, target=target, kind=notification.kind)
                return
            if not error.retry:
                break
        self._metrics.count(FAILED, target=target, kind=notification.kind)

    def _attempt(
        self,
        notifier: Notifier,
        notification: Notification,
        *,
        links: Sequence[Link],
        target: str,
        last: bool,
    ) -> NotifyError | None:
        """`last`: no retry follows, whatever the error (the log must not promise one)."""
        try:
            notifier.send(notification, links=links)
        except NotifyError as error:
            self._log.warning(
                "notification to %s failed (%s): %s",
                target,
                "not retried" if not error.retry else "gave up" if last else "will retry",
                error,
                extra=_fields(notification, target),
            )
            return error
        except Exception as crash:  # a notifier's bug must not kill its lane
            self._log.exception(
                "notification to %s crashed", target, extra=_fields(notification, target)
            )
            return NotifyError(str(crash), retry=False)
        return None

    def _links_for(self, notification: Notification, target: str) -> Sequence[Link]:
        """Minted once per delivery, so every retry carries the same links."""
        if self._links is None:
            return ()
        try:
            return self._links(notification, target)
        except Exception:  # without links the warning still goes, with the CLI command
            self._log.exception(
                "links for %s not made", target, extra=_fields(notification, target)
            )
            return ()


def _fields(notification: Notification, target: str) -> dict[str, str]:
    return {
        "namespace": notification.workload.namespace,
        "workload": notification.workload.name,
        "notification_kind": notification.kind.value,
        "target": target,
    }
