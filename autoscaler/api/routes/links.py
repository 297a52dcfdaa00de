"""The signed "keep it" links of a warning: GET shows a confirm page, POST snoozes.

No bearer token: the signed token in the path is the credential (`engine.links`), for one
workload (namespace, name and UID), one warning and one snooze length, until it expires.
GET changes nothing, because link scanners and chat unfurlers fetch every GET. POST works
only while the warning the link answers is the workload's current valid one: the snooze
removes that warning, so a replayed or second click finds none and writes nothing (409).
The snooze is audited with `link:<recipient>` as the actor and clipped to the rule's bound.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import HTMLResponse

from autoscaler.api.context import ApiContext, Context
from autoscaler.api.lookup import held_of, rule_of
from autoscaler.api.pages import (
    Block,
    Detail,
    command,
    command_line,
    detail,
    html,
    naming,
    page,
    sentence,
    when,
)
from autoscaler.api.problems import ApiProblem
from autoscaler.api.routes.snoozes import SnoozeRaced, keep
from autoscaler.core.errors import ClusterError
from autoscaler.domain.audit.stopped import Stopped, bring_back_command, cli_name, stopped_of
from autoscaler.domain.durations import format_duration
from autoscaler.domain.models import WorkloadInfo, WorkloadRef
from autoscaler.domain.notices.held import words_for
from autoscaler.domain.notices.snoozes import SnoozeGrant
from autoscaler.domain.notices.staging import read_notice
from autoscaler.domain.policy.owner_words import named, stop_words
from autoscaler.domain.policy.rules import Rule
from autoscaler.domain.program import PROGRAM
from autoscaler.engine.notify.links import LINK_PATH, LinkRefused, SnoozeClaim

router = APIRouter(tags=["snoozes"])
MAX_TOKEN = 4096  # characters; a real token is a few hundred
# base64url(payload) "." base64url(signature), as `engine.notify.links` mints them
TOKEN_PATTERN = r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$"
# The schema states the token's shape; the route checks it, so that a browser gets the
# refusal page (403), not a JSON 422.
Token = Annotated[
    str,
    Path(
        description="The signed token of the link.",
        json_schema_extra={"maxLength": MAX_TOKEN, "pattern": TOKEN_PATTERN},
    ),
]
LINK_REASON = "kept from the link in the warning"
PAGE_ANSWERS: dict[int | str, dict[str, Any]] = {
    status: {"description": text, "content": {"text/html": {}}}
    for status, text in (
        (403, "Tampered or expired"),
        (404, "Links are off, or the workload is gone"),
        (
            409,
            "Already used, already stopped, no stop planned, or the rule's snoozes for today "
            "used up",
        ),
        (503, "Not available now"),
    )
}
USED = "This link was already used, or no stop is planned for this workload any more."
ANY_WORKLOAD = (PROGRAM, "snooze", "NAMESPACE/NAME", "4h")  # for a refusal that cannot name it


class Refusal(Exception):
    """Answered as a page with this status: the person reading it is in a browser. Every
    refusal says what to do next."""

    def __init__(self, status: int, title: str, *paragraphs: str) -> None:
        super().__init__(title)
        self.status, self.title, self.paragraphs = status, title, paragraphs

    def page(self) -> HTMLResponse:
        return page(self.status, self.title, *self.paragraphs, refused=True)


@dataclass(frozen=True)
class Redeemable:
    claim: SnoozeClaim
    workload: WorkloadInfo
    rule: Rule
    stop_at: datetime | None


@router.get(
    LINK_PATH + "{token}",
    summary="A keep-it link's confirm page (changes nothing)",
    response_class=HTMLResponse,
    responses=PAGE_ANSWERS,
)
def confirm(context: Context, token: Token) -> HTMLResponse:
    now = context.clock.now()
    try:
        found = _redeemable(context, token, now=now)
    except Refusal as refusal:
        return refusal.page()
    bound = found.rule.notice.snooze.max_duration
    length = min(found.claim.snooze, bound)
    stop = when(found.stop_at, now=now) if found.stop_at is not None else "a time not set"
    words = words_for(held_of(context, found.workload.ref))
    workload = found.workload
    stopped = stop_words(workload.owner, manager=workload.manager)
    return page(
        200,
        words.question.format(ref=named(workload.ref, workload.owner)),
        html("It is planned to stop at ", stop, f", because {words.because}."),
        f"If stopped, {stopped.done}.",
        f"Keeping it snoozes the stop for {format_duration(length)}"
        + (
            f" (this rule allows at most {format_duration(bound)})."
            if length < found.claim.snooze
            else "."
        ),
        _kueue_workload(workload.ref),
        form=f"Keep it for {format_duration(length)}",
    )


@router.post(
    LINK_PATH + "{token}",
    summary="Follow a keep-it link: snooze the planned stop",
    response_class=HTMLResponse,
    responses=PAGE_ANSWERS,
)
def redeem(context: Context, token: Token) -> HTMLResponse:
    now = context.clock.now()
    try:
        found = _redeemable(context, token, now=now)
        grant = _snooze(context, found, now=now)
    except Refusal as refusal:
        return refusal.page()
    except SnoozeRaced:  # another click on this link (or another snooze) came first
        return _used(found.workload, rule=found.rule, now=now).page()
    except ApiProblem as problem:  # refused by the rule's bounds (409), no rulebook (503)
        return Refusal(
            problem.status, "Not kept", problem.detail, *_ask_admin(found.workload)
        ).page()
    assert grant.until is not None
    clipped = " (the longest snooze its rule allows)" if grant.clipped_from is not None else ""
    workload = found.workload
    return page(
        200,
        f"Kept {named(workload.ref, workload.owner)}",
        html("It will not be stopped before ", when(grant.until, now=now), f"{clipped}."),
        f"If it is {words_for(held_of(context, workload.ref)).still} then, you will be "
        "warned again first.",
        _kueue_workload(workload.ref),
    )


def _redeemable(context: ApiContext, token: str, *, now: datetime) -> Redeemable:
    """The claim, the workload read fresh and its rule, when the link still answers the
    workload's current warning at `now` (the request's time); else a Refusal, and nothing has
    been written."""
    claim = _claim(context, token, now=now)
    try:
        workload = context.cluster.get_workload(claim.workload)
    except ClusterError as exc:
        raise _unavailable(context, exc) from None
    if workload is None or workload.uid != claim.uid:
        raise _gone(claim.workload)
    try:
        rule = rule_of(context, workload)
    except ApiProblem as problem:
        raise Refusal(
            problem.status, "Not available", problem.detail, *_ask_admin(workload)
        ) from None
    story = stopped_of(workload)  # our annotations on it, else on its owner (a suspend's)
    if story is not None and story.ours and story.at is not None:
        raise _stopped(workload, story=story, at=story.at, now=now)
    notice = read_notice(workload, rule=rule, now=now)
    if notice.warned_at is None or not _same_second(notice.warned_at, claim.warned_at):
        raise _used(workload, rule=rule, now=now)
    return Redeemable(claim=claim, workload=workload, rule=rule, stop_at=notice.stop_at)


def _snooze(context: ApiContext, found: Redeemable, *, now: datetime) -> SnoozeGrant:
    try:
        return keep(
            context,
            found.workload,
            until=now + found.claim.snooze,
            by=f"link:{found.claim.recipient}",
            reason=LINK_REASON,
            rule=found.rule,
            now=now,
        )
    except ClusterError as exc:
        raise _unavailable(context, exc) from None


def _unavailable(context: ApiContext, exc: ClusterError) -> Refusal:
    """The Kubernetes API failing, as a page: the API's JSON problem means nothing to a
    person in a browser. The link may be tried again: a snooze whose answer was lost but
    which applied has consumed the warning, and the retry says so."""
    context.logger.warning("keep-it link not served: the Kubernetes API failed: %s", exc)
    return Refusal(
        503,
        "Not available now",
        "The cluster cannot be reached just now; try again shortly.",
        "Reload this page in a minute: the link works until it expires.",
    )


def _claim(context: ApiContext, token: str, *, now: datetime) -> SnoozeClaim:
    if context.notices.links is None:
        raise Refusal(
            404,
            "Not found",
            "Keep-it links are not enabled on this service.",
            "Keep the workload from a terminal instead:",
            command(*ANY_WORKLOAD),
        )
    try:
        if len(token) > MAX_TOKEN or re.fullmatch(TOKEN_PATTERN, token) is None:
            raise LinkRefused("tampered: not a link's token")
        return context.notices.links.verify(token, now=now)
    except LinkRefused as refused:
        raise _refused(refused, now=now) from None


def _refused(refused: LinkRefused, *, now: datetime) -> Refusal:
    """A link we did not mint as it stands, or past its time: what to do instead."""
    expired = refused.expired
    if expired is None:
        return Refusal(
            403,
            "Link refused",
            f"This link cannot be used ({refused.reason}).",
            "Copy the whole address (a link cut at the end of a line is refused), or ask "
            "for a new link: the next warning brings fresh ones.",
            "Or keep the workload from a terminal:",
            command(*ANY_WORKLOAD),
        )
    ref = expired.workload
    return Refusal(
        403,
        "Link expired",
        html(
            "This link to keep ",
            naming(str(ref)),
            " expired at ",
            when(expired.expires, now=now),
            ".",
        ),
        "Ask for a new link, or keep it from a terminal:",
        command(PROGRAM, "snooze", str(ref), _hours(expired.snooze)),
    )


def _gone(ref: WorkloadRef) -> Refusal:
    return Refusal(
        404,
        "Workload gone",
        html(
            naming(str(ref)),
            " no longer exists as warned: it was deleted or re-created (a new one gets "
            "warnings and links of its own). There is nothing to keep.",
        ),
        "To see what runs there now:",
        command(PROGRAM, "status", "-n", ref.namespace),
    )


def _stopped(workload: WorkloadInfo, *, story: Stopped, at: datetime, now: datetime) -> Refusal:
    """Too late to keep: when it stopped and what that did, in the kind's words, then the
    command that brings it back, as `status` gives it (or, for a requeue that comes back by
    itself, the command that shows it)."""
    ref, owner = workload.ref, workload.owner
    stopped = stop_words(owner, manager=workload.manager)
    said = html("Stopped at ", when(at, now=now), ". ", sentence(stopped.done))
    next_step: tuple[str, ...] = ("To see it now:", _status_command(workload))
    if story.lasts:
        back = command_line(bring_back_command(workload))
        next_step = ("To bring it back:", back, sentence(stopped.comes_back))
    return Refusal(
        409, f"{named(ref, owner)} was already stopped", said, *next_step, _kueue_workload(ref)
    )


def _used(workload: WorkloadInfo, *, rule: Rule, now: datetime) -> Refusal:
    """No current warning for this link: used already, replaced, or never stopping."""
    ref, owner = workload.ref, workload.owner
    notice = read_notice(workload, rule=rule, now=now)
    kept = (
        (html("It is kept until ", when(notice.snoozed_until, now=now), "."),)
        if notice.snoozed_until is not None
        else ()
    )
    return Refusal(
        409,
        "Already used or no stop planned",
        USED,
        *kept,
        "Nothing to do now: if it is warned again, that warning brings a new link.",
        html("To see ", naming(named(ref, owner)), " now:"),
        _status_command(workload),
        _kueue_workload(ref),
    )


def _status_command(workload: WorkloadInfo) -> Block:
    return command(PROGRAM, "status", cli_name(workload), "-n", workload.ref.namespace)


def _kueue_workload(ref: WorkloadRef) -> Detail:
    """The Kueue Workload's name, in small print: people know the owner, an admin this."""
    return detail(f"Its Kueue Workload: {ref}.")


def _ask_admin(workload: WorkloadInfo) -> tuple[str, Block]:
    ref = workload.ref
    return (
        "Ask your cluster admin. Which rule applies, and why:",
        command(PROGRAM, "explain", cli_name(workload), "-n", ref.namespace),
    )


def _hours(snooze: timedelta) -> str:
    return format_duration(snooze, units="hms")


def _same_second(a: datetime, b: datetime) -> bool:
    """Annotations keep whole seconds; the link may carry more."""
    return a.astimezone(UTC).replace(microsecond=0) == b.astimezone(UTC).replace(microsecond=0)
