"""A Slack-compatible incoming webhook: the message as Block Kit blocks, `text` as the
fallback that notifications and older clients show.

Shape (Slack's Block Kit reference, https://docs.slack.dev/reference/block-kit/blocks/header-block,
.../blocks/section-block, .../blocks/actions-block and
.../block-elements/button-element): a `header` (plain text, at most 150 characters), a
`section` with the text, a `section` of `fields` (at most 10, two columns), a `context` with
the CLI command, and an `actions` block of `button` elements whose `url` Slack opens in the
browser (text at most 75 characters, url at most 3000). Opening it lands on our confirm page:
a GET never snoozes, so Slack's own link previews cannot keep a workload by accident.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from autoscaler.adapters.notify.http import post
from autoscaler.adapters.notify.wording import Wording, when, word
from autoscaler.domain.notices.notifications import Link, NoticeKind, Notification

HEADER_LIMIT = 150
BUTTON_TEXT_LIMIT = 75
BUTTON_URL_LIMIT = 3000
_TIME_FIELD = {
    NoticeKind.WARNING: "Stops at",
    NoticeKind.SNOOZED: "Kept until",
    NoticeKind.DELETE_WARNING: "Deleted at",
}


def mrkdwn_escape(text: str) -> str:
    """Slack reads `<…>` as a link or mention and `&` as an entity: written ones are escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def message(notification: Notification, *, links: Sequence[Link]) -> dict[str, Any]:
    wording = word(notification)
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": _plain(wording.title, HEADER_LIMIT)},
        {"type": "section", "text": _mrkdwn(mrkdwn_escape(wording.text))},
        {"type": "section", "fields": [_mrkdwn(f) for f in _fields(notification)]},
    ]
    if wording.hint:
        blocks.append({"type": "context", "elements": [_mrkdwn(_hint(wording))]})
    buttons = [
        _button(i, link) for i, link in enumerate(links) if len(link.url) <= BUTTON_URL_LIMIT
    ]
    if buttons:
        blocks.append({"type": "actions", "elements": buttons})
    return {"text": mrkdwn_escape(wording.title), "blocks": blocks}


class SlackNotifier:
    def __init__(self, name: str, url: str, timeout: timedelta) -> None:
        self.name = name
        self._url = url
        self._timeout = timeout

    def send(self, notification: Notification, *, links: Sequence[Link]) -> None:
        body = json.dumps(message(notification, links=links)).encode()
        headers = {"Content-Type": "application/json"}
        post(self._url, body=body, headers=headers, timeout=self._timeout, target=self.name)


def _fields(n: Notification) -> list[str]:
    fields = [
        f"*Workload*\n{mrkdwn_escape(str(n.workload))}",
        f"*Rule*\n{mrkdwn_escape(n.rule)}",
        f"*GPUs*\n{n.gpus}",
    ]
    if n.kind in _TIME_FIELD:
        shown = n.snoozed_until if n.kind is NoticeKind.SNOOZED else n.stop_at
        fields.append(f"*{_TIME_FIELD[n.kind]}*\n{when(shown)}")
    return fields


def _hint(wording: Wording) -> str:
    return f"Or from a terminal: `{mrkdwn_escape(wording.hint or '')}`"


def _button(index: int, link: Link) -> dict[str, Any]:
    return {
        "type": "button",
        "action_id": f"keep-{index}",  # unique within the block, as Slack asks
        "text": _plain(link.label, BUTTON_TEXT_LIMIT),
        "url": link.url,
    }


def _plain(text: str, limit: int) -> dict[str, Any]:
    shown = text if len(text) <= limit else text[: limit - 1] + "…"
    return {"type": "plain_text", "text": shown}


def _mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text}
