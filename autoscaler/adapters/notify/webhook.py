"""A webhook target: our JSON (`payload.py`), signed so the receiver can tell it came from us.

The signature header is `X-Idle-GPU-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>` over
`"<t>." + body`: binding the time lets a receiver refuse an old request replayed at it (it
checks `t` is recent), and the body cannot be altered without the key. `X-Idle-GPU-Delivery`
names the notification, the same on every retry of it, so a receiver that saw a delivery
whose answer got lost can ignore the second copy.

The warning is also the pre-stop hook: a receiver (a Ray job's own endpoint, for example)
can checkpoint on `kind: warning` before `stopAt` (docs/NOTIFICATIONS.md).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from datetime import timedelta

from autoscaler.adapters.notify.http import post
from autoscaler.adapters.notify.payload import as_json
from autoscaler.core.clock import SystemClock
from autoscaler.core.ports import Clock
from autoscaler.domain.annotations import optional_time_text, time_text
from autoscaler.domain.notices.notifications import Link, Notification

SIGNATURE_HEADER = "X-Idle-GPU-Signature"
DELIVERY_HEADER = "X-Idle-GPU-Delivery"


def signature(secret: bytes, *, timestamp: int, body: bytes) -> str:
    """The header's value: what the receiver recomputes with the shared secret."""
    digest = hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256)
    return f"t={timestamp},v1={digest.hexdigest()}"


def delivery_id(notification: Notification, *, target: str) -> str:
    """Derived from what the notification is, not drawn at random, so each retry (and a
    resend of the same decision) carries the same id."""
    n = notification
    parts = (
        target,
        n.kind.value,
        n.uid,
        str(n.workload),
        time_text(n.at),
        optional_time_text(n.stop_at),
    )
    return hashlib.sha256("\n".join(str(p) for p in parts).encode()).hexdigest()[:32]


class WebhookNotifier:
    def __init__(
        self,
        name: str,
        url: str,
        secret: bytes | None,
        timeout: timedelta,
        *,
        clock: Clock | None = None,
    ) -> None:
        self.name = name
        self._url = url
        self._secret = secret
        self._timeout = timeout
        self._clock = clock or SystemClock()

    def send(self, notification: Notification, *, links: Sequence[Link]) -> None:
        body = json.dumps(as_json(notification, links=links), separators=(",", ":")).encode()
        headers = {
            "Content-Type": "application/json",
            DELIVERY_HEADER: delivery_id(notification, target=self.name),
        }
        if self._secret is not None:  # signed at each attempt, so `t` is the sending time
            stamp = int(self._clock.now().timestamp())
            headers[SIGNATURE_HEADER] = signature(self._secret, timestamp=stamp, body=body)
        post(self._url, body=body, headers=headers, timeout=self._timeout, target=self.name)
