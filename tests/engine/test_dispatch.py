"""The dispatcher: notifications leave the caller's thread at once and reach each target on
its own lane, retried with a capped doubling backoff only when another try may help, and
every outcome is counted.

Deliveries go to the real webhook receiver on 127.0.0.1 through the real notifier; a test
that needs a notifier to misbehave in a way HTTP cannot (a crash) uses a fake at our port.
Backoffs are recorded by an injected wait, so no test sleeps.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry

from autoscaler.adapters.notify.webhook import WebhookNotifier
from autoscaler.core.ports import Notifier
from autoscaler.domain.notices.notifications import Link, NoticeKind, Notification
from autoscaler.engine.notify.dispatch import LinkMaker, NotificationDispatcher, Wait, backoffs
from tests.support.notification_builders import a_notification
from tests.support.webhook_receiver import WEBHOOK_SECRET, WebhookReceiver

LOG = logging.getLogger("test-dispatch")


@dataclass(frozen=True)
class Retry:
    attempts: int = 3
    initial_backoff: timedelta = timedelta(seconds=2)
    max_backoff: timedelta = timedelta(minutes=1)


@dataclass
class RecordedWaits:
    """A wait that returns at once and remembers how long it was asked to wait."""

    seconds: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> bool:
        self.seconds.append(seconds)
        return False


@dataclass
class Dispatch:
    dispatcher: NotificationDispatcher
    registry: CollectorRegistry

    def outcomes(self, target: str, outcome: str, kind: str = "warning") -> float:
        labels = {"target": target, "kind": kind, "outcome": outcome}
        return self.registry.get_sample_value(PREFIX + "notifications_total", labels) or 0.0

    def retries(self, target: str) -> float:
        labels = {"target": target}
        return self.registry.get_sample_value(PREFIX + "notification_retries_total", labels) or 0.0


PREFIX = "idle_gpu_autoscaler_"


def hook(receiver: WebhookReceiver, *, timeout: float = 2.0) -> WebhookNotifier:
    return WebhookNotifier("hook", receiver.url, WEBHOOK_SECRET, timedelta(seconds=timeout))


def dispatch(
    notifiers: Mapping[str, Notifier],
    *,
    wait: Wait | None = None,
    retry: Retry = Retry(),
    queue_limit: int = 10,
    links: LinkMaker | None = None,
) -> Dispatch:
    registry = CollectorRegistry()
    dispatcher = NotificationDispatcher(
        notifiers,
        links=links,
        registry=registry,
        retry=retry,
        queue_limit=queue_limit,
        logger=LOG,
        wait=wait,
    )
    return Dispatch(dispatcher, registry)


@pytest.fixture
def started() -> Iterator[list[NotificationDispatcher]]:
    """Dispatchers a test started, stopped at its end whatever happens."""
    dispatchers: list[NotificationDispatcher] = []
    yield dispatchers
    for dispatcher in dispatchers:
        dispatcher.stop()


def run(d: Dispatch, started: list[NotificationDispatcher]) -> NotificationDispatcher:
    d.dispatcher.start()
    started.append(d.dispatcher)
    return d.dispatcher


def test_two_500s_then_a_200_is_delivered_after_two_retries_with_doubling_waits(
    webhook_receiver: WebhookReceiver, started: list[NotificationDispatcher]
) -> None:
    waits = RecordedWaits()
    d = dispatch({"hook": hook(webhook_receiver)}, wait=waits)
    webhook_receiver.fail_next(2, status=500)
    run(d, started).submit(a_notification(), targets=["hook"])
    requests = webhook_receiver.wait_for(3)
    d.dispatcher.stop()  # drains: the outcome is counted once it returns
    assert [r.status for r in requests] == [500, 500, 200]
    assert len({r.delivery for r in requests}) == 1
    assert (d.outcomes("hook", "sent"), d.retries("hook"), waits.seconds) == (1, 2, [2.0, 4.0])


def test_a_400_is_not_retried(
    webhook_receiver: WebhookReceiver, started: list[NotificationDispatcher]
) -> None:
    d = dispatch({"hook": hook(webhook_receiver)}, wait=RecordedWaits())
    webhook_receiver.fail_next(1, status=400)
    run(d, started).submit(a_notification(), targets=["hook"])
    webhook_receiver.wait_for(1)
    d.dispatcher.stop()
    assert len(webhook_receiver.received) == 1
    assert (d.outcomes("hook", "failed"), d.retries("hook")) == (1, 0)


def test_it_gives_up_after_its_attempts_and_its_last_failure_promises_no_retry(
    webhook_receiver: WebhookReceiver,
    started: list[NotificationDispatcher],
    caplog: pytest.LogCaptureFixture,
) -> None:
    d = dispatch({"hook": hook(webhook_receiver)}, wait=RecordedWaits(), retry=Retry(attempts=3))
    webhook_receiver.fail_next(5, status=503)
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        run(d, started).submit(a_notification(), targets=["hook"])
        webhook_receiver.wait_for(3)
        d.dispatcher.stop()
    assert len(webhook_receiver.received) == 3
    assert (d.outcomes("hook", "failed"), d.retries("hook")) == (1, 2)
    said = [r.getMessage().split("(")[1].split(")")[0] for r in caplog.records]
    assert said == ["will retry", "will retry", "gave up"]


def test_the_backoff_doubles_up_to_its_cap() -> None:
    retry = Retry(
        attempts=6, initial_backoff=timedelta(seconds=1), max_backoff=timedelta(seconds=5)
    )
    assert backoffs(retry) == (1.0, 2.0, 4.0, 5.0, 5.0)


def test_submit_only_queues_while_the_receiver_holds_a_delivery(
    webhook_receiver: WebhookReceiver, started: list[NotificationDispatcher]
) -> None:
    """The caller never waits on a receiver: with the first delivery held by the receiver
    until this test releases it (a client timeout far beyond it), a second submit returns
    and its notification waits in the lane, unsent, until the held one is answered."""
    d = dispatch({"hook": hook(webhook_receiver, timeout=60)}, wait=RecordedWaits())
    webhook_receiver.hang_next()
    dispatcher = run(d, started)
    dispatcher.submit(a_notification(), targets=["hook"])
    webhook_receiver.wait_for(1)  # the lane's worker is now blocked on the held reply

    dispatcher.submit(a_notification(NoticeKind.ALL_CLEAR), targets=["hook"])

    # Returned while the first delivery is still held: a submit that delivered in the
    # caller's thread would have waited for it (only this test releases it, and only now).
    assert webhook_receiver.hanging == 1
    assert [r.json()["kind"] for r in webhook_receiver.received] == ["warning"]  # queued
    webhook_receiver.release()
    webhook_receiver.wait_for(3)  # the held one, its retry (it got no answer), the queued one
    dispatcher.stop()
    assert (d.outcomes("hook", "sent"), d.retries("hook")) == (1, 1)
    assert d.outcomes("hook", "sent", kind="all-clear") == 1


def test_the_timeout_cuts_a_hung_delivery_and_the_next_ones_go_out(
    webhook_receiver: WebhookReceiver, started: list[NotificationDispatcher]
) -> None:
    d = dispatch({"hook": hook(webhook_receiver, timeout=0.3)}, wait=RecordedWaits())
    webhook_receiver.hang_next()
    dispatcher = run(d, started)
    dispatcher.submit(a_notification(), targets=["hook"])
    dispatcher.submit(a_notification(NoticeKind.ALL_CLEAR), targets=["hook"])
    # The hung one, its retry once the timeout cut it, the next: all while the first is
    # still held, so only the client's timeout can have ended the wait for it.
    webhook_receiver.wait_for(3)
    assert webhook_receiver.hanging == 1
    dispatcher.stop()
    assert (d.outcomes("hook", "sent"), d.retries("hook")) == (1, 1)
    assert d.outcomes("hook", "sent", kind="all-clear") == 1


def test_a_hanging_receiver_does_not_delay_another_target(
    webhook_receiver: WebhookReceiver, started: list[NotificationDispatcher]
) -> None:
    other = WebhookReceiver(secret=WEBHOOK_SECRET)
    with other:
        d = dispatch({"slow": hook(webhook_receiver, timeout=30), "fast": hook(other)})
        webhook_receiver.hang_next()
        run(d, started).submit(a_notification(), targets=["slow", "fast"])
        webhook_receiver.wait_for(1)  # the slow one is now hanging
        assert other.wait_for(1, timeout=5)[0].verified
        webhook_receiver.release()


def test_an_unknown_target_is_counted_and_logged_not_sent(
    webhook_receiver: WebhookReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    d = dispatch({"hook": hook(webhook_receiver)})
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        d.dispatcher.submit(a_notification(), targets=["no-such-target"])
    assert d.outcomes("unknown", "unknown-target") == 1
    assert "no-such-target" in caplog.text


def test_a_full_queue_drops_and_counts_without_blocking(webhook_receiver: WebhookReceiver) -> None:
    d = dispatch({"hook": hook(webhook_receiver)}, queue_limit=2)  # not started: nothing leaves
    for _ in range(3):
        d.dispatcher.submit(a_notification(), targets=["hook"])
    assert d.outcomes("hook", "dropped") == 1
    d.dispatcher.stop()


def test_stop_interrupts_a_backoff_and_counts_the_failure(
    webhook_receiver: WebhookReceiver, started: list[NotificationDispatcher]
) -> None:
    long_waits = Retry(attempts=5, initial_backoff=timedelta(minutes=10))
    d = dispatch({"hook": hook(webhook_receiver)}, retry=long_waits)  # the real, stoppable wait
    webhook_receiver.fail_next(5, status=500)
    run(d, started).submit(a_notification(), targets=["hook"])
    webhook_receiver.wait_for(1)
    began = time.perf_counter()
    d.dispatcher.stop()
    assert time.perf_counter() - began < 5
    assert (d.outcomes("hook", "failed"), len(webhook_receiver.received)) == (1, 1)


@dataclass
class LinkCalls:
    recipients: list[str] = field(default_factory=list)

    def __call__(self, notification: Notification, target: str) -> Sequence[Link]:
        self.recipients.append(target)
        return (Link("Keep 4h", f"https://x/v1/links/snooze/{target}", timedelta(hours=4)),)


def test_links_are_made_once_per_target_and_kept_across_retries(
    webhook_receiver: WebhookReceiver, started: list[NotificationDispatcher]
) -> None:
    calls = LinkCalls()
    d = dispatch({"hook": hook(webhook_receiver)}, wait=RecordedWaits(), links=calls)
    webhook_receiver.fail_next(1, status=500)
    run(d, started).submit(a_notification(), targets=["hook"])
    requests = webhook_receiver.wait_for(2)
    assert calls.recipients == ["hook"]
    assert [r.json()["links"][0]["url"] for r in requests] == ["https://x/v1/links/snooze/hook"] * 2


@dataclass
class CrashingOnce:
    """A notifier with a bug on its first call (HTTP cannot make one raise anything else)."""

    sent: list[Notification] = field(default_factory=list)

    def send(self, notification: Notification, *, links: Sequence[Link]) -> None:
        if not self.sent:
            self.sent.append(notification)
            raise RuntimeError("bug")
        self.sent.append(notification)


def test_a_notifier_that_crashes_does_not_stop_its_lane(
    started: list[NotificationDispatcher],
) -> None:
    crashing = CrashingOnce()
    d = dispatch({"buggy": crashing})
    dispatcher = run(d, started)
    dispatcher.submit(a_notification(), targets=["buggy"])
    dispatcher.submit(a_notification(NoticeKind.ALL_CLEAR), targets=["buggy"])
    dispatcher.stop()
    assert d.outcomes("buggy", "failed") == 1
    assert d.outcomes("buggy", "sent", kind="all-clear") == 1
