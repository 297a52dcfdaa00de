"""compose/notify.py: targets, their secrets and the link signer built from `notifications:`,
with every unreadable or weak secret a ConfigError naming its key, and the whole chain (sink →
lane → signed webhook with Keep links → receiver) working end to end."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from autoscaler.compose.notify import Notifications, build_notifications
from autoscaler.core.errors import ConfigError
from autoscaler.domain import annotations as keys
from autoscaler.domain.notices.notifications import Notification
from autoscaler.engine.notify.notices import send
from autoscaler.settings.tree import Settings
from tests.support.domain_builders import NOW, a_policy, a_workload
from tests.support.fakes import FakeClock
from tests.support.notification_builders import WARNED_AT, a_notification
from tests.support.webhook_receiver import WEBHOOK_SECRET, WebhookReceiver

LINK_KEY = b"a-link-signing-key-of-32-bytes-or-more"


def build(notifications: dict[str, Any]) -> Notifications:
    settings = Settings.model_validate({"notifications": notifications})
    return build_notifications(
        settings,
        registry=CollectorRegistry(),
        clock=FakeClock(NOW),
        logger=logging.getLogger("test-notify"),
    )


def secret(tmp_path: Path, name: str, value: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(value)
    return str(path)


def test_no_targets_still_gives_a_sink_and_no_signer() -> None:
    built = build({})
    built.teller.sink.submit(a_notification(), targets=())
    assert built.signer is None and built.teller.sink is built.dispatcher


def test_a_warning_goes_signed_to_the_webhook_with_keep_links_for_that_target(
    tmp_path: Path, webhook_receiver: WebhookReceiver
) -> None:
    built = build(
        {
            "targets": {
                "team-hook": {
                    "type": "webhook",
                    "urlFile": secret(tmp_path, "url", webhook_receiver.url.encode() + b"\n"),
                    "secretFile": secret(tmp_path, "hmac", WEBHOOK_SECRET + b"\n"),
                }
            },
            "links": {
                "baseUrl": "https://gpu.example.com",
                "signingKeyFile": secret(tmp_path, "key", LINK_KEY),
            },
        }
    )
    built.dispatcher.start()
    try:
        built.dispatcher.submit(a_notification(), targets=["team-hook"])
        [request] = webhook_receiver.wait_for(1)
    finally:
        built.dispatcher.stop()
    assert request.verified
    links = request.json()["links"]
    assert [link["label"] for link in links] == ["Keep 4h", "Keep 8h", "Keep 24h"]
    assert built.signer is not None
    claim = built.signer.verify(links[0]["url"].rsplit("/", 1)[1], now=NOW)
    assert (claim.recipient, claim.warned_at) == ("team-hook", WARNED_AT)


def a_target(**fields: Any) -> dict[str, Any]:
    return {"targets": {"team": {"type": "webhook", **fields}}}


@pytest.mark.parametrize(
    ("notifications", "key"),
    [
        pytest.param(
            a_target(urlFile="/nonexistent/url"),
            "notifications.targets.team.urlFile",
            id="unreadable-url-file",
        ),
        pytest.param(a_target(), "notifications.targets.team.url: set exactly one", id="no-url"),
        pytest.param(
            a_target(urlFile="/dev/null"),
            "notifications.targets.team.urlFile: /dev/null is empty",
            id="an-empty-url-file",
        ),
        pytest.param(
            a_target(url="http://x", secretFile="/nonexistent/hmac"),
            "notifications.targets.team.secretFile",
            id="unreadable-secret-file",
        ),
        pytest.param(
            {"targets": {"team": {"type": "slack", "url": "http://x", "secretFile": "/s"}}},
            "notifications.targets.team.secretFile",
            id="a-slack-target-is-not-signed",
        ),
        pytest.param(
            {"links": {"baseUrl": "https://x"}},
            "notifications.links.signingKeyFile",
            id="links-without-a-signing-key",
        ),
        pytest.param(
            {"defaultTargets": ["nobody"]},
            "notifications.defaultTargets",
            id="a-default-target-that-does-not-exist",
        ),
    ],
)
def test_a_bad_notification_setting_is_a_config_error_naming_its_key(
    notifications: dict[str, Any], key: str
) -> None:
    with pytest.raises(ConfigError) as failed:
        build(notifications)
    assert key in str(failed.value)


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("links", id="signing-key"),
        pytest.param("target", id="webhook-secret"),
    ],
)
def test_a_key_shorter_than_32_bytes_is_refused(tmp_path: Path, where: str) -> None:
    short = secret(tmp_path, "short", b"too-short\n")
    notifications = (
        {"links": {"baseUrl": "https://x", "signingKeyFile": short}}
        if where == "links"
        else a_target(url="http://x", secretFile=short)
    )
    with pytest.raises(ConfigError, match="holds 9 bytes; at least 32"):
        build(notifications)


@dataclass
class RecordingSink:
    sent: list[tuple[Notification, tuple[str, ...]]] = field(default_factory=list)

    def submit(self, notification: Notification, *, targets: Sequence[str]) -> None:
        self.sent.append((notification, tuple(targets)))


@pytest.mark.parametrize(
    ("namespace_notify", "told"),
    [
        pytest.param("team-hook", [("team-hook",)], id="the-namespace-names-its-target"),
        pytest.param(None, [("ops",)], id="else-the-default-targets"),
        pytest.param("none", [], id="none-is-events-only-and-nothing-is-submitted"),
    ],
)
def test_a_notification_from_the_api_is_routed_as_the_loops_and_none_named_submits_nothing(
    namespace_notify: str | None, told: list[tuple[str, ...]]
) -> None:
    built = build(
        {
            "targets": {
                name: {"type": "webhook", "url": "http://127.0.0.1:9"}
                for name in ("team-hook", "ops")
            },
            "defaultTargets": ["ops"],
        }
    )
    sink = RecordingSink()
    workload = a_workload("team-a", "rc").build()
    if namespace_notify is not None:
        workload = replace(workload, namespace_annotations={keys.NOTIFY: namespace_notify})
    notices = replace(built.teller, sink=sink)
    send(notices, a_notification(), workload=workload, rule=a_policy().default_rule)
    assert [targets for _, targets in sink.sent] == told
