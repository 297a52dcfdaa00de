"""A notification URL is a secret (a Slack webhook's path is its only key): it is checked at
start-up with errors that name the key, never the URL; a delivery's failure is logged without
it; and a receiver's answer, which may echo the path, is known by its status alone. Over real
HTTP, against a receiver on 127.0.0.1."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from prometheus_client import CollectorRegistry

from autoscaler.adapters.notify.http import post
from autoscaler.compose.notify import Notifications, build_notifications
from autoscaler.core.errors import ConfigError, NotifyError
from autoscaler.settings.tree import Settings, load_settings
from tests.support.check_config import check_config
from tests.support.domain_builders import NOW
from tests.support.fakes import FakeClock
from tests.support.notification_builders import a_notification
from tests.support.webhook_receiver import WebhookReceiver

SECRET = "T0SECRETTEAM/B0SECRETHOOK/xoxSeCrEtToKeN42"  # as a Slack webhook's path is made
SECRET_PIECES = ("T0SECRETTEAM", "B0SECRETHOOK", "xoxSeCrEtToKeN42", "hunter2pass")
QUICK_RETRIES = {"attempts": 3, "initialBackoff": "10ms", "maxBackoff": "10ms"}


def shows_a_secret(text: str) -> bool:
    return any(piece.lower() in text.lower() for piece in SECRET_PIECES)


@pytest.fixture
def echoing_receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver(echo_path=True) as receiver:
        yield receiver


def secret_url(receiver: WebhookReceiver) -> str:
    return urlsplit(receiver.url)._replace(path=f"/services/{SECRET}").geturl()


def build(notifications: dict[str, Any]) -> Notifications:
    return build_notifications(
        Settings.model_validate({"notifications": notifications}),
        registry=CollectorRegistry(),
        clock=FakeClock(NOW),
        logger=logging.getLogger("test-notify-secrets"),
    )


def url_file(tmp_path: Path, url: str) -> str:
    path = tmp_path / "url"
    path.write_bytes(url.encode() + b"\n")
    return str(path)


@pytest.mark.parametrize("kind", ["slack", "webhook"])
def test_a_receiver_that_echoes_its_secret_path_is_logged_by_status_only(
    kind: str,
    echoing_receiver: WebhookReceiver,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    target = {"type": kind, "urlFile": url_file(tmp_path, secret_url(echoing_receiver))}
    built = build({"targets": {"chat": target}, "retry": QUICK_RETRIES})
    echoing_receiver.fail_next(2, status=503)
    echoing_receiver.fail_next(1, status=404)
    built.dispatcher.start()
    try:
        built.dispatcher.submit(a_notification(), targets=["chat"])
        requests = echoing_receiver.wait_for(3)
    finally:
        built.dispatcher.stop()
    assert all(SECRET in request.path for request in requests)  # it was there to echo
    messages = [record.getMessage() for record in caplog.records]
    assert any("HTTP 503" in message and "will retry" in message for message in messages)
    assert any("HTTP 404" in message and "not retried" in message for message in messages)
    shown = [logging.Formatter().format(record) for record in caplog.records]  # tracebacks too
    assert not [line for line in shown if shows_a_secret(line) or "no hook at" in line]


def a_closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize(
    ("url", "retry"),
    [
        pytest.param(f"http://127.0.0.1:{a_closed_port()}/services/{SECRET}", True, id="refused"),
        pytest.param(f"http://127.0.0.1:99999/services/{SECRET}", None, id="port-past-65535"),
        pytest.param(f"http://127.0.0.1:8o8o/services/{SECRET}", False, id="port-not-a-number"),
        pytest.param(f"http://u:hunter2pass@127.0.0.1/services/{SECRET}", False, id="password"),
        pytest.param(f"http://127.0.0.1:1/services/{SECRET} x", False, id="a-space"),
        pytest.param(f"http://127.0.0.1:1/services/{SECRET}\r\nX-A: b", False, id="cr-lf"),
        pytest.param(f"http://127.0.0.1:1/services/{SECRET}\u00e9", False, id="not-ascii"),
    ],
)
def test_a_delivery_error_never_quotes_the_url(
    url: str, retry: bool | None, caplog: pytest.LogCaptureFixture
) -> None:
    """What the start-up check refuses cannot reach a delivery; if it did, the client's
    exception (which quotes the URL) is said in our own words. `retry` None: as the platform
    has it (a port past 65535 is refused by some socket layers, wrapped round by others)."""
    caplog.set_level(logging.DEBUG)
    with pytest.raises(NotifyError) as failed:
        post(url, body=b"{}", headers={}, timeout=timedelta(seconds=2), target="chat")
    assert str(failed.value).startswith("target chat: ")
    assert not shows_a_secret(str(failed.value))
    assert failed.value.__cause__ is None and failed.value.__suppress_context__
    assert retry is None or failed.value.retry is retry
    assert not [r for r in caplog.records if shows_a_secret(r.getMessage())]


UNFIT = {
    "a-space": f"https://hooks.example.com/services/{SECRET} trailing",
    "a-line-break": f"https://hooks.example.com/services/{SECRET}\r\nX-Injected: yes",
    "a-tab": f"https://hooks.example.com/services/\t{SECRET}",
    "a-port-past-65535": f"https://hooks.example.com:65536/services/{SECRET}",
    "a-port-not-a-number": f"https://hooks.example.com:44x/services/{SECRET}",
    "port-0": f"https://hooks.example.com:0/services/{SECRET}",
    "no-host": f"https:///services/{SECRET}",
    "a-password": f"https://u:hunter2pass@hooks.example.com/services/{SECRET}",
    "not-http": f"ftp://hooks.example.com/services/{SECRET}",
    "no-scheme": f"hooks.example.com/services/{SECRET}",
    "not-ascii": f"https://hooks.example.com/services/{SECRET}\u00e9",
    "an-open-bracket": f"https://[::1/services/{SECRET}",
}


@pytest.mark.parametrize("url", [pytest.param(url, id=name) for name, url in UNFIT.items()])
def test_a_url_file_unfit_to_post_to_stops_the_start_naming_the_key_not_the_url(
    url: str, tmp_path: Path
) -> None:
    path = url_file(tmp_path, url)
    with pytest.raises(ConfigError) as refused:
        build({"targets": {"chat": {"type": "slack", "urlFile": path}}})
    assert f"notifications.targets.chat.urlFile: {path} must hold an http:// or https://" in str(
        refused.value
    )
    assert not shows_a_secret(str(refused.value))


@pytest.mark.parametrize("url", [pytest.param(url, id=name) for name, url in UNFIT.items()])
def test_an_unfit_url_in_the_settings_is_refused_naming_the_key_not_the_url(
    url: str, tmp_path: Path
) -> None:
    path = tmp_path / "config.yaml"
    settings = {"notifications": {"targets": {"hook": {"type": "webhook", "url": url}}}}
    path.write_text(yaml.safe_dump(settings), encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_settings(path, environ={})
    assert "notifications.targets.hook.url: an http:// or https:// address" in str(refused.value)
    assert not shows_a_secret(str(refused.value))


def test_check_config_names_the_key_of_an_unfit_url_and_prints_no_part_of_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.yaml"
    url = f"https://hooks.example.com:8443x/services/{SECRET}"
    path.write_text(f"notifications: {{targets: {{hook: {{type: webhook, url: '{url}'}}}}}}\n")
    result = check_config(path)
    assert result.returncode == 2
    assert "notifications.targets.hook.url: an http:// or https:// address" in result.stderr
    assert not shows_a_secret(result.stderr + result.stdout)


def test_a_fit_url_with_a_query_and_a_trailing_newline_delivers_and_logs_nothing_of_it(
    echoing_receiver: WebhookReceiver, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    path = url_file(tmp_path, secret_url(echoing_receiver) + "?channel=hunter2pass")
    built = build({"targets": {"chat": {"type": "slack", "urlFile": path}}})
    built.dispatcher.start()
    try:
        built.dispatcher.submit(a_notification(), targets=["chat"])
        [request] = echoing_receiver.wait_for(1)
    finally:
        built.dispatcher.stop()
    assert request.path == f"/services/{SECRET}?channel=hunter2pass"
    assert request.status == 200
    assert not [r for r in caplog.records if shows_a_secret(logging.Formatter().format(r))]
