"""The `notifications:` section (ISSUE 15): where warnings and all-clears go, how they are
signed and retried, and the "keep it" links in them.

Targets are named here and only here: a namespace's `idle-gpu-autoscaler.io/notify`
annotation (or label) and a rule's `notify` pick targets by name, never by URL, so nobody
who can annotate a namespace can make the service post to an address of their choosing.
Secrets (webhook URLs of Slack, HMAC keys) are read from files, mounted from Secrets.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import Field

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
