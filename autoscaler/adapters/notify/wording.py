"""What each kind of notification says, written once for every notifier (ISSUE 15).

A webhook receiver gets the same title and text as a Slack channel, so a message reads the
same wherever it lands. Reasons and names may come from kubectl: they are escaped
(`domain.text.escape`) so no control or bidi character reaches a reader's screen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from autoscaler.domain.audit.stopped import reactivate_command
from autoscaler.domain.notices.held import words_for
from autoscaler.domain.notices.notifications import NoticeKind, Notification
from autoscaler.domain.policy.owner_words import StopWords, named, stop_words
from autoscaler.domain.program import PROGRAM
from autoscaler.domain.text import escape

# Commands as the CLI parses them (tests/adapters/test_notifiers.py runs each through it).
SNOOZE_HINT = PROGRAM + " snooze {ref} 4h"


@dataclass(frozen=True)
class Wording:
    title: str  # one line: Slack's header and fallback text, the webhook's `title`
    text: str  # what happens and why
    hint: str | None = None  # the command a person can run instead of clicking


def word(notification: Notification) -> Wording:
    return _WRITERS[notification.kind](notification)


def when(at: datetime | None) -> str:
    """A time as people read it in a message: to the minute, in UTC, said so."""
    return "unknown" if at is None else at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _ref(n: Notification) -> str:
    """The owner as people know it ("RayCluster team-a/alice-rc"), else the Workload."""
    return escape(named(n.workload, n.owner))


def _workload(n: Notification) -> str:
    """The Workload's own name, for an admin, where it is not the owner's: "; Workload …"."""
    if n.owner is None or n.owner.name == n.workload.name:
        return ""
    return escape(f"; Workload {n.workload}")


def _stop(n: Notification) -> StopWords:
    return stop_words(n.owner, manager=n.manager)


def _gpus(count: int) -> str:
    return f"{count} GPU" if count == 1 else f"{count} GPUs"


def _warning(n: Notification) -> Wording:
    """In the words of how it holds its GPUs (`domain/notices/held.py`)."""
    words = words_for(n.held)
    wrong = escape(n.wrong or "")
    return Wording(
        title=words.warning_title.format(ref=_ref(n), when=when(n.stop_at), wrong=wrong),
        text=f"It holds {_gpus(n.gpus)} {words.holds}: {escape(n.reason)} "
        f"(rule {escape(n.rule)}{_workload(n)}). {escape(_stop(n).if_stopped)}. "
        f"To {words.keep_running}, press a Keep button or snooze it from a terminal.",
        hint=SNOOZE_HINT.format(ref=escape(str(n.workload))),
    )


def _all_clear(n: Notification) -> Wording:
    return Wording(
        title=f"{_ref(n)} is in use again: the planned stop is off",
        text=f"{escape(n.reason)} (rule {escape(n.rule)}). Nothing to do.",
    )


def _snoozed(n: Notification) -> Wording:
    by = escape(n.snoozed_by or "someone")
    return Wording(
        title=f"{_ref(n)} is kept until {when(n.snoozed_until)}",
        text=f"{by} snoozed the planned stop. If it is {words_for(n.held).still} then, you will "
        "be warned again before it stops.",
        hint=SNOOZE_HINT.format(ref=escape(str(n.workload))),
    )


def _deactivated(n: Notification) -> Wording:
    stop = _stop(n)
    if not stop.lasts:  # a requeue: it comes back by itself, nothing to reactivate
        return Wording(
            title=f"{_ref(n)} yielded its {_gpus(n.gpus)} to the queue",
            text=f"{escape(n.reason)} (rule {escape(n.rule)}{_workload(n)}). It "
            f"{escape(stop.said)}.",
        )
    return Wording(
        title=f"{_ref(n)} was stopped: its {_gpus(n.gpus)} are free for others",
        text=f"{escape(n.reason)} (rule {escape(n.rule)}{_workload(n)}). "
        f"{escape(_sentence(stop.means))}. To bring it back: {escape(stop.bring_back)}.",
        hint=_reactivate_hint(n),
    )


def _sentence(words: str) -> str:
    return words[:1].upper() + words[1:]


def _idle_held(n: Notification) -> Wording:
    return Wording(
        title=f"{_ref(n)} holds {_gpus(n.idle_held_gpus)} idle of {n.gpus}",
        text=f"Some of its GPUs worked while {n.idle_held_gpus} sat idle the whole window: "
        f"{escape(n.reason)}. It is not stopped; consider asking for fewer GPUs.",
    )


def _delete_warning(n: Notification) -> Wording:
    return Wording(
        title=f"{_ref(n)} will be deleted at {when(n.stop_at)}",
        text=f"It has been inactive since the service stopped it (rule {escape(n.rule)}"
        f"{_workload(n)}). "
        "Reactivate it before then to keep it.",
        hint=_reactivate_hint(n),
    )


def _deleted(n: Notification) -> Wording:
    return Wording(
        title=f"{_ref(n)} was deleted",
        text=f"It stayed inactive after the service stopped it (rule {escape(n.rule)}"
        f"{_workload(n)}).",
    )


def _reactivate_hint(n: Notification) -> str:
    name, namespace = escape(n.workload.name), escape(n.workload.namespace)
    return reactivate_command(namespace=namespace, name=name)


_WRITERS: dict[NoticeKind, Callable[[Notification], Wording]] = {
    NoticeKind.WARNING: _warning,
    NoticeKind.ALL_CLEAR: _all_clear,
    NoticeKind.SNOOZED: _snoozed,
    NoticeKind.DEACTIVATED: _deactivated,
    NoticeKind.IDLE_HELD: _idle_held,
    NoticeKind.DELETE_WARNING: _delete_warning,
    NoticeKind.DELETED: _deleted,
}
