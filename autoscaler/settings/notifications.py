"""The `notifications:` section (ISSUE 15): where warnings and all-clears go, how they are
signed and retried, and the "keep it" links in them.

Targets are named here and only here: a namespace's `idle-gpu-autoscaler.io/notify`
annotation (or label) and a rule's `notify` pick targets by name, never by URL, so nobody
who can annotate a namespace can make the service post to an address of their choosing.
Secrets (webhook URLs of Slack, HMAC keys) are read from files, mounted from Secrets.

`check_notifications` makes the checks no field can make alone (exactly one of url and
urlFile, links that can be signed), each problem naming its key, at start-up, so a bad file
fails `check-config` and `serve` alike instead of a cycle later.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field

from autoscaler.domain.notices.routing import EVENTS_ONLY
from autoscaler.settings.base import Duration, Section

TARGET_NAME = r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$"  # also a label value and a metric label


class TargetSettings(Section):
    type: Literal["webhook", "slack"] = Field(
        description="`webhook`: our JSON, signed with HMAC-SHA256 over the timestamp and body "
        "in the header X-Idle-GPU-Signature (docs/NOTIFICATIONS.md). `slack`: a "
        "Slack-compatible incoming webhook (blocks, with the Keep buttons as links)."
    )
    url: str | None = Field(
        None, description="Where to POST. Slack's incoming-webhook URL is a secret: use urlFile."
    )
    url_file: Path | None = Field(
        None, description="A file holding the URL (a mounted Secret): the URL is the secret."
    )
    secret_file: Path | None = Field(
        None,
        description="`webhook` only: a file holding the HMAC key (32 bytes or more, a mounted "
        "Secret) the receiver verifies the signature with. "
        "Unset: the payload is sent unsigned (the receiver cannot tell it came from us).",
    )
    timeout: Duration = Field(
        timedelta(seconds=5), description="One delivery's limit; a slower answer is retried."
    )


class RetrySettings(Section):
    attempts: int = Field(5, ge=1, le=20, description="Deliveries tried per notification.")
    initial_backoff: Duration = Field(
        timedelta(seconds=2), description="The wait before the first retry; doubled each time."
    )
    max_backoff: Duration = Field(
        timedelta(minutes=1), description="The longest wait between retries."
    )


class LinkSettings(Section):
    base_url: str | None = Field(
        None,
        description="The API's address as people's browsers reach it (an Ingress or Route), "
        "e.g. https://idle-gpu.example.com. Unset: notifications carry no links, only the "
        "CLI command to snooze.",
    )
    signing_key_file: Path | None = Field(
        None,
        description="The HMAC key that signs the links (a mounted Secret, 32 bytes or more). "
        "Required with baseUrl. Keep it apart from any webhook secret: whoever holds it can "
        "mint links.",
    )
    ttl: Duration = Field(
        timedelta(hours=24),
        description="A link expires this long after it was sent (a day: the next warning "
        "brings new ones).",
    )
    choices: list[Duration] = Field(
        default_factory=lambda: [timedelta(hours=4), timedelta(hours=8), timedelta(hours=24)],
        description="The Keep buttons' snooze lengths; each is clipped to the rule's "
        "snooze.maxDuration.",
    )


class NotificationSettings(Section):
    targets: dict[str, TargetSettings] = Field(
        default_factory=dict,
        description="Named targets (1-32 lowercase letters, digits or '-'; not `none`). None: "
        "Events only (the Event is always written).",
        examples=[
            {
                "ml-slack": {
                    "type": "slack",
                    "urlFile": "/etc/idle-gpu-autoscaler/notify/ml-slack-url",
                    "timeout": "5s",
                },
                "team-hook": {
                    "type": "webhook",
                    "url": "https://gpu-hooks.example.com/idle",
                    "secretFile": "/etc/idle-gpu-autoscaler/notify/team-hook-key",
                },
            }
        ],
    )
    default_targets: list[str] = Field(
        default_factory=list,
        description="Targets for workloads whose namespace and rule name none (e.g. "
        "[team-hook]); empty: Events only.",
    )
    links: LinkSettings = Field(
        default_factory=LinkSettings,
        description='The signed "keep it" links in a warning. GET opens a confirm page and '
        "changes nothing (link scanners fetch links); the snooze is the page's POST, once, for "
        "that workload and warning.",
    )
    retry: RetrySettings = Field(
        default_factory=RetrySettings,
        description="A failed delivery (5xx, timeout, refused) is retried with doubling waits, "
        "counted in idle_gpu_autoscaler_notification_retries_total; a notifier never holds up "
        "or hastens a stop.",
    )
    queue_limit: int = Field(
        1000,
        ge=1,
        description="Notifications waiting at most; beyond it they are dropped and "
        "counted (the Event and the annotations still tell).",
    )


def check_notifications(section: NotificationSettings) -> list[str]:
    """The `notifications:` section on its own: targets, default targets, links, retries."""
    problems = []
    for name, target in section.targets.items():
        problems += _target(f"notifications.targets.{name}", name, target)
    problems += target_name_problems(
        "notifications.defaultTargets", section.default_targets, known=set(section.targets)
    )
    problems += _links(section)
    retry = section.retry
    if retry.max_backoff < retry.initial_backoff:
        problems.append("notifications.retry.maxBackoff: must not be shorter than initialBackoff")
    return problems


def target_name_problems(key: str, names: Sequence[str], *, known: set[str]) -> list[str]:
    """Each of `names` that is no target of `notifications.targets`, under `key`."""
    problems = []
    for name in names:
        if name == EVENTS_ONLY:
            problems.append(
                f"{key}: {EVENTS_ONLY} is not a target (a namespace's annotation "
                f"idle-gpu-autoscaler.io/notify: {EVENTS_ONLY} means Events only)"
            )
        elif name not in known:
            instead = f" or write one of {', '.join(sorted(known))}" if known else " or remove it"
            problems.append(
                f"{key}: {name} is not in notifications.targets: define it there{instead}"
            )
    return problems


def _target(key: str, name: str, target: TargetSettings) -> list[str]:
    problems = []
    if name == EVENTS_ONLY:
        problems.append(f"{key}: {EVENTS_ONLY} is reserved (a namespace's Events only)")
    elif not _is_target_name(name):
        problems.append(f"{key}: a name is 1-32 lowercase letters, digits or '-'")
    if (target.url is None) == (target.url_file is None):
        problems.append(f"{key}.url: set exactly one of url and urlFile")
    elif target.url is not None and (problem := url_problem(target.url.strip())):
        problems.append(f"{key}.url: {problem}")
    if target.type == "slack" and target.secret_file is not None:
        problems.append(
            f"{key}.secretFile: Slack verifies no signature of ours; the secret is the URL "
            "itself (urlFile)"
        )
    if target.timeout <= timedelta(0):
        problems.append(f"{key}.timeout: must be longer than 0s")
    return problems


def _links(section: NotificationSettings) -> list[str]:
    links, key = section.links, "notifications.links"
    problems = []
    if links.base_url is not None and links.signing_key_file is None:
        problems.append(f"{key}.signingKeyFile: needed with baseUrl, to sign the links")
    if links.signing_key_file is not None and links.base_url is None:
        problems.append(f"{key}.baseUrl: needed with signingKeyFile, the address links point at")
    if links.base_url is not None and (problem := url_problem(links.base_url)):
        problems.append(f"{key}.baseUrl: {problem}")
    if links.ttl <= timedelta(0):
        problems.append(f"{key}.ttl: must be longer than 0s")
    if links.base_url is not None and not links.choices:
        problems.append(f"{key}.choices: at least one snooze length, or links have no button")
    problems += [
        f"{key}.choices[{place}]: must be longer than 0s"
        for place, choice in enumerate(links.choices)
        if choice <= timedelta(0)
    ]
    return problems


_HTTP = "an http:// or https:// address"


def url_problem(url: str) -> str | None:
    """What `url` should be and is not (`<key>: <what it should be>`), or None when it is fit to
    POST to; in words that never quote it, since a Slack webhook's URL is its secret and a
    problem is printed and logged."""
    if any(char.isspace() or not char.isprintable() for char in url):
        return f"{_HTTP} alone on one line, without whitespace or control characters (CR, LF)"
    if not url.isascii():
        return f"{_HTTP} in ASCII: percent-encode other characters"
    try:
        parts = urlsplit(url)
        port = parts.port  # a ValueError when not a number from 0 to 65535
    except ValueError:  # that, or a bracketed host left open
        return f"{_HTTP} with a readable host and a port from 1 to 65535"
    checks = (
        (parts.scheme not in ("http", "https"), _HTTP),
        (not parts.hostname, f"{_HTTP} that names a host"),
        ("@" in parts.netloc, f"{_HTTP} without a user or password before the host"),
        (port == 0, f"{_HTTP} with a port from 1 to 65535"),
    )
    return next((problem for failed, problem in checks if failed), None)


def _is_target_name(name: str) -> bool:
    return re.fullmatch(TARGET_NAME, name) is not None
