"""The words a notice uses for how a workload holds its GPUs, one row per class: idle (the
metrics say its GPUs sit unused) or not running (Kubernetes says none of its GPU pods runs:
quota held without work, `domain/usage/not_running.py`).

Every surface that tells of a warning, a snooze or a planned stop reads its words here: the
Event (`engine/notify/notices.py`), the notifications (`adapters/notify/wording.py`), the
keep-it page (`api/routes/links.py`) and the demo's live view. None of them branches on the
class; a class without a row reads as idle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from autoscaler.domain.durations import format_duration
from autoscaler.domain.models import Decision, State


@dataclass(frozen=True)
class HeldWords:
    headline: str  # the Event's first words: "<headline>: stop planned at ..."
    # Before "stop planned at ..." on a line that reads as idle unless told otherwise (the
    # demo's live view): empty for idle, so its lines read as they always did.
    label: str
    # The notification's title of a warning: {ref}, {when} and {wrong} (what is wrong).
    warning_title: str
    holds: str  # "It holds 2 GPUs <holds>: ..."
    keep: str  # the Event's last way to keep it: "..., or <keep>."
    keep_running: str  # the notification's: "To <keep_running>, press a Keep button ..."
    still: str  # after a snooze: "If it is <still> then, you will be warned again"
    because: str  # the keep-it page: "It is planned to stop at ..., because <because>."
    question: str  # the keep-it page's title: {ref}


HELD_WORDS: Mapping[State, HeldWords] = {
    State.IDLE: HeldWords(
        headline="Idle GPUs",
        label="",
        warning_title="{ref} will be stopped at {when}",
        holds="that sat idle",
        keep="use the GPUs",
        keep_running="keep it running",
        still="still idle",
        because="its GPUs sit idle",
        question="Keep {ref} running?",
    ),
    State.NOT_RUNNING: HeldWords(
        headline="GPUs held, not running",
        label="GPUs held, not running: ",
        warning_title="{ref} holds GPUs, not running: stop planned at {when} ({wrong})",
        holds="while none of its GPU pods runs",
        keep="get its GPU pods running",
        keep_running="keep its GPUs",
        still="still not running",
        because="it holds GPUs while none of its GPU pods runs",
        question="Keep the GPUs of {ref}?",
    ),
}


def words_for(held: State) -> HeldWords:
    """The words of a held class (`domain/usage/assessment.held_class`)."""
    return HELD_WORDS.get(held, HELD_WORDS[State.IDLE])


def what_is_wrong(decision: Decision | None) -> str | None:
    """What Kubernetes says is wrong and for how long: "image ghcr.io/x:v2 cannot be pulled
    (ImagePullBackOff) for 45 min"; None when the verdict names no trouble (idle)."""
    verdict = decision.assessment if decision is not None else None
    if verdict is None or not verdict.trouble:
        return None
    return f"{verdict.trouble} for {span_text(verdict.idle_for)}"


def span_text(span: timedelta) -> str:
    """Minutes as people say them ("45 min"); from two hours on, hours and days ("3h5m")."""
    if span < timedelta(hours=2):
        return f"{int(span // timedelta(minutes=1))} min"
    return format_duration(span, units="dhm", split="always")
