"""Signed "keep it" links in a warning (ISSUE 15): what each one claims, and checking it.

A token is `base64url(JSON payload) "." base64url(HMAC-SHA256(key, payload part))`. The
payload names the workload (namespace, name and UID: a re-created object is another one),
the warning it answers (`warned`), the snooze length, the target it was sent to (the actor
of the audited snooze) and when it expires. Nothing is stored: the key proves we minted it.

A link is single-use because the snooze it grants consumes the warning it names (the
snooze's patch removes the warned-at annotation); the route that redeems a claim compares
`warned_at` with the Workload's current one, so a prefetched or replayed link does nothing.
Verifying here only says the token is ours and unexpired.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from autoscaler.core.errors import AutoscalerError
from autoscaler.domain.annotations import parse_time
from autoscaler.domain.durations import LONGEST, format_duration
from autoscaler.domain.models import WorkloadRef
from autoscaler.domain.notices.notifications import Link, NoticeKind, Notification

LINK_PATH = "/v1/links/snooze/"
_FIELDS = ("ns", "name", "uid", "warned", "snooze", "to", "exp")


class LinkRefused(AutoscalerError):
    """The token is not one we minted as it stands (tampered) or is past its expiry;
    `expired`: the claim of a link we did mint, past its expiry (its page names the workload)."""

    def __init__(self, reason: str, *, expired: SnoozeClaim | None = None) -> None:
        super().__init__(f"link refused: {reason}")
        self.reason = reason
        self.expired = expired


@dataclass(frozen=True)
class SnoozeClaim:
    workload: WorkloadRef
    uid: str
    warned_at: datetime  # the warning the link answers; void once another replaced it
    snooze: timedelta
    recipient: str  # the target the link was sent to: the snooze's actor
    expires: datetime


class LinkSigner:
    def __init__(
        self, *, key: bytes, base_url: str, ttl: timedelta, choices: Sequence[timedelta]
    ) -> None:
        self._key = key
        self._base_url = base_url.rstrip("/")
        self._ttl = ttl
        self._choices = tuple(choices)

    def links(
        self, notification: Notification, *, recipient: str, now: datetime
    ) -> tuple[Link, ...]:
        """One Keep link per snooze choice, for a warning only (the others have nothing to
        answer)."""
        warned_at = notification.warned_at
        if notification.kind is not NoticeKind.WARNING or warned_at is None:
            return ()
        claims = (
            SnoozeClaim(
                workload=notification.workload,
                uid=notification.uid,
                warned_at=warned_at,
                snooze=choice,
                recipient=recipient,
                expires=now + self._ttl,
            )
            for choice in self._choices
        )
        return tuple(self._link(claim) for claim in claims)

    def token(self, claim: SnoozeClaim) -> str:
        payload = _encode(json.dumps(_as_payload(claim), separators=(",", ":")).encode())
        return f"{payload}.{_encode(self._mac(payload))}"

    def verify(self, token: str, *, now: datetime) -> SnoozeClaim:
        payload, dot, mac = token.partition(".")
        # compared as text, not decoded: base64's unused low bits would let two spellings of
        # one signature both pass
        expected = _encode(self._mac(payload)).encode()
        if not dot or not hmac.compare_digest(mac.encode("utf-8", "replace"), expected):
            raise LinkRefused("tampered: the signature does not match")
        claim = _from_payload(_decode(payload))
        if now >= claim.expires:
            raise LinkRefused(f"expired at {claim.expires.isoformat()}", expired=claim)
        return claim

    def _link(self, claim: SnoozeClaim) -> Link:
        label = f"Keep {_length(claim.snooze)}"
        return Link(
            label=label, url=self._base_url + LINK_PATH + self.token(claim), snooze=claim.snooze
        )

    def _mac(self, payload: str) -> bytes:
        return hmac.new(self._key, payload.encode("utf-8", "replace"), hashlib.sha256).digest()


def _as_payload(claim: SnoozeClaim) -> dict[str, Any]:
    return {
        "ns": claim.workload.namespace,
        "name": claim.workload.name,
        "uid": claim.uid,
        "warned": _time(claim.warned_at),
        "snooze": int(claim.snooze.total_seconds()),
        "to": claim.recipient,
        "exp": _time(claim.expires),
    }


def _from_payload(raw: bytes) -> SnoozeClaim:
    """Only a token that passed the signature gets here; a bad one is still refused, not
    raised as a crash (a key shared by mistake with another tool must not break the route)."""
    try:
        fields = json.loads(raw)
        if not isinstance(fields, dict) or any(field not in fields for field in _FIELDS):
            raise LinkRefused("tampered: fields missing")
        warned, expires = parse_time(str(fields["warned"])), parse_time(str(fields["exp"]))
        if warned is None or expires is None or not _is_snooze_length(fields["snooze"]):
            raise LinkRefused("tampered: a field is malformed")
        return SnoozeClaim(
            workload=WorkloadRef(str(fields["ns"]), str(fields["name"])),
            uid=str(fields["uid"]),
            warned_at=warned,
            snooze=timedelta(seconds=fields["snooze"]),
            recipient=str(fields["to"]),
            expires=expires,
        )
    except (ValueError, TypeError) as bad:  # JSON or UTF-8
        raise LinkRefused("tampered: the payload does not decode") from bad


def _is_snooze_length(seconds: object) -> bool:
    """Whole seconds, more than none and no longer than any duration (so `now + snooze` is a
    date): a key shared by mistake may sign anything."""
    return type(seconds) is int and 0 < seconds <= LONGEST.total_seconds()


def _length(snooze: timedelta) -> str:
    """Whole hours as hours ("24h", not "1d": people compare the buttons by hours)."""
    return format_duration(snooze, units="hms")


def _time(at: datetime) -> str:
    """To the microsecond: `warned` must equal the annotation's time exactly when compared."""
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _decode(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as bad:
        raise LinkRefused("tampered: not base64url") from bad
