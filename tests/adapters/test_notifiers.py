"""The webhook and Slack notifiers against a real HTTP receiver on 127.0.0.1: what they
send, how the receiver checks it came from us, and how each failure is classed for retry."""

from __future__ import annotations

import argparse
import shlex
import socket
from datetime import timedelta

import pytest

from autoscaler.adapters.notify.http import post
from autoscaler.adapters.notify.slack import SlackNotifier
from autoscaler.adapters.notify.webhook import SIGNATURE_HEADER, WebhookNotifier
from autoscaler.adapters.notify.wording import word
from autoscaler.client.actions import plan
from autoscaler.client.commands import add_commands
from autoscaler.core.errors import NotifyError
from autoscaler.domain.notices.notifications import Link, NoticeKind
from tests.support.domain_builders import NOW
from tests.support.fakes import FakeClock
from tests.support.notification_builders import a_notification
from tests.support.webhook_receiver import WEBHOOK_SECRET, WebhookReceiver

TIMEOUT = timedelta(seconds=2)
KEEP = (
    Link("Keep 4h", "https://gpu.example.com/v1/links/snooze/t4", timedelta(hours=4)),
    Link("Keep 8h", "https://gpu.example.com/v1/links/snooze/t8", timedelta(hours=8)),
)


def a_webhook(url: str, *, secret: bytes | None = WEBHOOK_SECRET) -> WebhookNotifier:
    return WebhookNotifier("team-hook", url, secret, TIMEOUT, clock=FakeClock(NOW))


def test_the_receiver_verifies_the_signature_of_a_warning(
    webhook_receiver: WebhookReceiver,
) -> None:
    a_webhook(webhook_receiver.url).send(a_notification(), links=KEEP)
    [request] = webhook_receiver.wait_for(1)
    assert request.verified is True
    assert (request.header(SIGNATURE_HEADER) or "").startswith(f"t={int(NOW.timestamp())},v1=")
    assert request.header("Content-Type") == "application/json"


def test_the_receiver_rejects_a_body_altered_in_flight(webhook_receiver: WebhookReceiver) -> None:
    a_webhook(webhook_receiver.url).send(a_notification(), links=KEEP)
    [sent] = webhook_receiver.wait_for(1)
    altered = sent.body.replace(b'"gpus":2', b'"gpus":0')
    assert altered != sent.body
    with pytest.raises(NotifyError) as refused:  # replayed as a man in the middle would
        post(webhook_receiver.url, body=altered, headers=sent.headers, timeout=TIMEOUT, target="x")
    assert "HTTP 401" in str(refused.value) and refused.value.retry is False
    assert webhook_receiver.received[1].verified is False


def test_the_webhook_payload_says_what_when_and_how_to_keep_it(
    webhook_receiver: WebhookReceiver,
) -> None:
    a_webhook(webhook_receiver.url).send(a_notification(), links=KEEP)
    body = webhook_receiver.wait_for(1)[0].json()
    assert {k: body[k] for k in ("schemaVersion", "kind", "rule", "gpus", "idleHeldGpus")} == {
        "schemaVersion": 1,
        "kind": "warning",
        "rule": "gpu",
        "gpus": 2,
        "idleHeldGpus": 0,
    }
    assert body["workload"] == {"namespace": "team-a", "name": "rc", "uid": "uid-team-a-rc"}
    assert body["owner"] == {"kind": "RayCluster", "name": "rc", "display": "RayCluster team-a/rc"}
    assert body["stopLasts"] is True
    assert body["stopMeans"].startswith("suspended: KubeRay deletes its pods")
    assert (body["warnedAt"], body["stopAt"]) == ("2025-03-03T11:59:00Z", "2025-03-03T12:14:00Z")
    assert body["snoozedUntil"] is None
    assert body["links"][0] == {"label": "Keep 4h", "url": KEEP[0].url, "snoozeSeconds": 14400}
    assert body["command"] == "idle-gpu-autoscaler snooze team-a/rc 4h"


def test_an_unsigned_webhook_sends_no_signature() -> None:
    unsigned = WebhookReceiver()
    with unsigned:
        a_webhook(unsigned.url, secret=None).send(a_notification(), links=())
        [request] = unsigned.wait_for(1)
    assert request.header(SIGNATURE_HEADER) is None and request.verified is None


def test_a_retry_carries_the_same_delivery_id_and_another_notification_a_new_one(
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook = a_webhook(webhook_receiver.url)
    warning = a_notification()
    for notification in (warning, warning, a_notification(NoticeKind.ALL_CLEAR)):
        webhook.send(notification, links=())
    first, retried, other = (r.delivery for r in webhook_receiver.wait_for(3))
    assert first == retried and first != other and first


def test_the_slack_message_has_a_fallback_text_blocks_and_keep_buttons_that_are_links() -> None:
    slack = WebhookReceiver()
    with slack:
        SlackNotifier("team-slack", slack.url, TIMEOUT).send(a_notification(), links=KEEP)
        message = slack.wait_for(1)[0].json()
    assert message["text"] == "RayCluster team-a/rc will be stopped at 2025-03-03 12:14 UTC"
    header, text, fields, hint, actions = message["blocks"]
    assert header == {"type": "header", "text": {"type": "plain_text", "text": message["text"]}}
    assert text["type"] == "section" and "idle 62m" in text["text"]["text"]
    assert [f["text"] for f in fields["fields"]] == [
        "*Workload*\nteam-a/rc",
        "*Rule*\ngpu",
        "*GPUs*\n2",
        "*Stops at*\n2025-03-03 12:14 UTC",
    ]
    assert "`idle-gpu-autoscaler snooze team-a/rc 4h`" in hint["elements"][0]["text"]
    assert actions["type"] == "actions"
    assert [(b["type"], b["text"]["text"], b["url"]) for b in actions["elements"]] == [
        ("button", "Keep 4h", KEEP[0].url),
        ("button", "Keep 8h", KEEP[1].url),
    ]


def test_slack_text_written_by_people_cannot_make_links_or_mentions() -> None:
    slack = WebhookReceiver()
    with slack:
        sneaky = a_notification(reason="idle <!channel> <https://evil.example|click> & more")
        SlackNotifier("team-slack", slack.url, TIMEOUT).send(sneaky, links=())
        text = slack.wait_for(1)[0].json()["blocks"][1]["text"]["text"]
    assert "&lt;!channel&gt; &lt;https://evil.example|click&gt; &amp; more" in text


@pytest.mark.parametrize("kind", list(NoticeKind), ids=lambda kind: kind.value)
def test_every_kind_has_its_own_words_naming_the_workload(kind: NoticeKind) -> None:
    words = word(a_notification(kind, snoozed_by="alice", idle_held_gpus=1))
    assert "team-a/rc" in words.title and words.text


def a_closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize(
    ("status", "retry"),
    [
        pytest.param(500, True, id="500-is-retried"),
        pytest.param(503, True, id="503-is-retried"),
        pytest.param(429, True, id="429-too-many-is-retried"),
        pytest.param(400, False, id="400-is-not-retried"),
        pytest.param(404, False, id="404-is-not-retried"),
        pytest.param(301, False, id="a-redirect-is-not-followed-nor-retried"),
    ],
)
def test_a_refusal_is_classed_by_its_status(
    webhook_receiver: WebhookReceiver, status: int, retry: bool
) -> None:
    webhook_receiver.fail_next(1, status=status)
    with pytest.raises(NotifyError, match=f"HTTP {status}") as failed:
        a_webhook(webhook_receiver.url).send(a_notification(), links=())
    assert failed.value.retry is retry


def test_no_connection_is_retried_and_the_error_never_shows_the_url() -> None:
    url = f"http://127.0.0.1:{a_closed_port()}/secret-token-in-path"
    with pytest.raises(NotifyError) as failed:
        a_webhook(url).send(a_notification(), links=())
    assert failed.value.retry is True
    assert "team-hook" in str(failed.value) and "secret-token" not in str(failed.value)


def test_a_hanging_receiver_is_cut_off_by_the_timeout_and_retried(
    webhook_receiver: WebhookReceiver,
) -> None:
    webhook_receiver.hang_next()
    quick = WebhookNotifier("team-hook", webhook_receiver.url, None, timedelta(seconds=0.2))
    with pytest.raises(NotifyError) as failed:
        quick.send(a_notification(), links=())
    assert failed.value.retry is True


def test_a_url_that_is_not_http_is_not_retried() -> None:
    with pytest.raises(NotifyError) as failed:
        a_webhook("file:///etc/passwd").send(a_notification(), links=())
    assert failed.value.retry is False


HINTED = {
    NoticeKind.WARNING: "snooze",
    NoticeKind.SNOOZED: "snooze",
    NoticeKind.DEACTIVATED: "reactivate",
    NoticeKind.DELETE_WARNING: "reactivate",
}


@pytest.mark.parametrize(
    ("kind", "command"), [pytest.param(k, c, id=k.value) for k, c in HINTED.items()]
)
def test_a_hint_is_a_command_the_cli_accepts_as_written(kind: NoticeKind, command: str) -> None:
    hint = word(a_notification(kind)).hint
    assert hint is not None
    program, *argv = shlex.split(hint)
    parser = argparse.ArgumentParser(prog=program, exit_on_error=False)
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)  # a missing or unknown argument raises
    plan(args)  # the client's own checks: namespace and name known, the duration valid
    assert (program, args.command) == ("idle-gpu-autoscaler", command)
