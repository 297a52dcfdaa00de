"""Builds the notification targets, the dispatcher and the link signer from `notifications:`.

Every secret file (a Slack URL, a webhook's HMAC secret, the links' signing key) is read
once, here, at start: a file that cannot be read or a key too short to trust stops the
service with a ConfigError naming the key, rather than a warning that is never sent.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry

from autoscaler.adapters.notify.slack import SlackNotifier
from autoscaler.adapters.notify.webhook import WebhookNotifier
from autoscaler.core.errors import ConfigError
from autoscaler.core.ports import Clock, Notifier
from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.notices.notifications import Link, Notification
from autoscaler.domain.notices.routing import targets_for
from autoscaler.domain.policy.rules import Rule
from autoscaler.engine.notify.dispatch import LinkMaker, NotificationDispatcher
from autoscaler.engine.notify.links import LinkSigner
from autoscaler.engine.notify.notices import NoticeTeller, Route
from autoscaler.settings.notifications import (
    LinkSettings,
    TargetSettings,
    check_notifications,
    url_problem,
)
from autoscaler.settings.tree import Settings

MIN_KEY_BYTES = 32  # HMAC-SHA256's own output size: a shorter key is guessable sooner


@dataclass(frozen=True)
class Notifications:
    dispatcher: NotificationDispatcher  # the sink: start it with the service, stop it after
    signer: LinkSigner | None  # None: no links (no `links.baseUrl`); the link route refuses
    route: Route  # who hears about a workload: its namespace's, else its rule's, else defaults

    @property
    def teller(self) -> NoticeTeller:
        """Where the loop and the API's snoozes tell people: the dispatcher, routed."""
        return NoticeTeller(sink=self.dispatcher, route=self.route)


def build_notifications(
    settings: Settings, *, registry: CollectorRegistry, clock: Clock, logger: logging.Logger
) -> Notifications:
    section = settings.notifications
    # `load_settings` checks these; settings built in code have only passed pydantic.
    problems = check_notifications(section)
    if problems:
        raise ConfigError(problems)
    notifiers = {
        name: _notifier(name, target, clock=clock) for name, target in section.targets.items()
    }
    signer = _signer(section.links)
    dispatcher = NotificationDispatcher(
        notifiers,
        links=None if signer is None else _link_maker(signer, clock=clock),
        registry=registry,
        retry=section.retry,
        queue_limit=section.queue_limit,
        logger=logger,
    )
    return Notifications(
        dispatcher=dispatcher, signer=signer, route=_router(tuple(section.default_targets))
    )


def _router(defaults: tuple[str, ...]) -> Route:
    def route(workload: WorkloadInfo, rule: Rule) -> tuple[str, ...]:
        return targets_for(workload, rule=rule, defaults=defaults)

    return route


def _notifier(name: str, target: TargetSettings, *, clock: Clock) -> Notifier:
    key = f"notifications.targets.{name}"
    url = target.url if target.url_file is None else _text(target.url_file, f"{key}.urlFile")
    url = (url or "").strip()
    if not url:  # the settings' checks see the file's name, not what it holds
        raise ConfigError([f"{key}.urlFile: {target.url_file} is empty"])
    if problem := url_problem(url):  # said without the URL: it is the secret
        raise ConfigError([f"{key}.urlFile: {target.url_file} must hold {problem}"])
    if target.type == "slack":
        return SlackNotifier(name, url, target.timeout)
    secret = None if target.secret_file is None else _key(target.secret_file, f"{key}.secretFile")
    return WebhookNotifier(name, url, secret, target.timeout, clock=clock)


def _signer(links: LinkSettings) -> LinkSigner | None:
    if links.base_url is None:
        return None
    assert links.signing_key_file is not None  # checked with the section
    key = _key(links.signing_key_file, "notifications.links.signingKeyFile")
    return LinkSigner(key=key, base_url=links.base_url, ttl=links.ttl, choices=links.choices)


def _link_maker(signer: LinkSigner, *, clock: Clock) -> LinkMaker:
    def links(notification: Notification, target: str) -> Sequence[Link]:
        return signer.links(notification, recipient=target, now=clock.now())

    return links


def _key(path: Path, key: str) -> bytes:
    """A key file's bytes, without the surrounding whitespace an editor or `echo` leaves."""
    value = _read(path, key).strip()
    if len(value) < MIN_KEY_BYTES:
        raise ConfigError([f"{key}: {path} holds {len(value)} bytes; at least {MIN_KEY_BYTES}"])
    return value


def _text(path: Path, key: str) -> str:
    try:
        return _read(path, key).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{key}: {path} is not UTF-8 text"]) from exc


def _read(path: Path, key: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError([f"{key}: cannot read {path}: {exc.strerror or exc}"]) from exc
