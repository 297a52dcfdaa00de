"""The small HTML pages a "keep it" link opens in a browser: the confirm page (GET, which
changes nothing), the answer to its button (POST) and the refusals.

Made for a phone first: a viewport, one narrow column, a button a thumb can press. The only
style and script are inline and allowed by their SHA-256 in the CSP (`style-src` and
`script-src`), so no outside resource is ever fetched and nothing injected would run. Times
are written as readable UTC with how far away they are ("in 15 min"), inside a
`<time datetime=...>`; the script rewrites that text into the browser's own time zone (without
it, the UTC text stays). The form may post only back to this service. Pages are never cached
(`no-store`: the token is in the address) and every value is HTML-escaped.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shlex
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from html import escape

from fastapi.responses import HTMLResponse

from autoscaler.domain.annotations import time_text

# A "namespace/name" moves to the next line whole when it fits there (`naming`); a longer one
# wraps after its "/" (never inside the namespace: no "team-" then "a/..."), then after a "-";
# `anywhere` only lets a word with no break in it (a 63-character label) be cut rather than
# widen the page. A command is a block of its own whose tokens are inline blocks: it breaks
# only between tokens (never "idle-gpu-" then "autoscaler"), a token wider than the line
# anywhere, and it copies as the one line it is. Colours keep a contrast of 4.5:1 or more
# (WCAG AA): grey small print #59636e on white is 6.1:1, white on the button's green 5.1:1.
STYLE = (
    "body{margin:0;padding:1rem;font:16px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,"
    "sans-serif;color:#1f2328;background:#f6f8fa}"
    "main{max-width:34rem;margin:0 auto;padding:1.25rem;background:#fff;"
    "border:1px solid #d0d7de;border-top:4px solid #1a7f37;border-radius:.5rem}"
    "main.refused{border-top-color:#bc4c00}"
    "h1{font-size:1.35rem;line-height:1.3;margin:0 0 1rem}"
    "h1,p{overflow-wrap:anywhere}"
    "p{margin:0 0 .75rem}"
    ".detail{font-size:.875rem;color:#59636e;margin-top:1rem}"
    "code{font:.875rem/1.5 ui-monospace,SFMono-Regular,Menlo,monospace}"
    ".command code{display:block;padding:.5rem .75rem;background:#f6f8fa;"
    "border:1px solid #d0d7de;border-radius:.375rem}"
    ".command span{display:inline-block;max-width:100%}"
    "time{font-weight:600}"
    ".ref{display:inline-block}.ns{white-space:nowrap}"
    "form{margin:1.25rem 0 0}"
    "button{font:inherit;font-weight:600;width:100%;max-width:20rem;padding:.8rem 1rem;"
    "border:0;border-radius:.5rem;color:#fff;background:#1a7f37;cursor:pointer;"
    "box-shadow:0 1px 2px rgba(31,35,40,.25)}"
    "button:hover{background:#116329}"
    "button:focus-visible{outline:3px solid #0969da;outline-offset:2px}"
)
# Every <time datetime> in the browser's time zone; the UTC text stays as its tooltip.
SCRIPT = (
    'for(const t of document.querySelectorAll("time[datetime]")){'
    "const at=new Date(t.dateTime);if(isNaN(at))continue;t.title=t.textContent;"
    't.textContent=at.toLocaleString([],{day:"numeric",month:"short",year:"numeric",'
    'hour:"2-digit",minute:"2-digit",hourCycle:"h23",timeZoneName:"short"})}'
)


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


PAGE_HEADERS: Mapping[str, str] = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        f"default-src 'none'; style-src {_sha256(STYLE)}; script-src {_sha256(SCRIPT)}; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Robots-Tag": "noindex, nofollow",
}
TEMPLATE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="robots" content="noindex">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style></head>
<body>
<main class="{tone}">
<h1>{heading}</h1>
{body}
</main>
<script>{script}</script>
</body>
</html>
"""


# a DNS label, its "/", and a name
REF = re.compile(r"\b([a-z0-9][a-z0-9-]*/)([a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)")


class Html(str):
    """Markup already escaped: passed through as it is where plain text would be escaped."""


class Block(Html):
    """A whole paragraph of markup, not wrapped in another."""


class Detail(Block):
    """Small print, for an admin: below everything else, the button included."""


def html(*parts: str) -> Html:
    """One paragraph's content: plain text escaped, `Html` parts kept."""
    return Html("".join(part if isinstance(part, Html) else escape(part) for part in parts))


def naming(text: str) -> Html:
    """Text naming workloads ("RayCluster team-a/alice-rc"): each "namespace/name" kept on
    one line where it fits, its namespace always."""
    return Html(
        REF.sub(r'<span class="ref"><span class="ns">\1</span><wbr>\2</span>', escape(text))
    )


def command(*tokens: str) -> Block:
    """A command to paste, as a block of its own: each shell token (quoted where the shell
    needs it) in a span the line never breaks inside, single spaces between; its text is the
    command exactly."""
    return _command_block([shlex.quote(token) for token in tokens])


def command_line(line: str) -> Block:
    """A command already written for the shell (`bring_back_command`'s), laid out as `command`
    lays one out, each token with its own quotes: its text is `line` exactly."""
    lexer = shlex.shlex(line, posix=False)  # not posix: a token keeps its quotes
    lexer.whitespace_split = True
    return _command_block(list(lexer))


def _command_block(quoted: list[str]) -> Block:
    spans = " ".join(f"<span>{escape(token)}</span>" for token in quoted)
    return Block(f'<p class="command"><code>{spans}</code></p>')


def detail(text: str) -> Detail:
    """A paragraph of secondary detail (the Kueue Workload's name), in small print."""
    return Detail(f'<p class="detail">{escape(text)}</p>')


def sentence(clause: str) -> str:
    """A clause as a sentence: its first letter capital, a full stop at its end."""
    return f"{clause[:1].upper()}{clause[1:]}."


def when(at: datetime, *, now: datetime) -> Html:
    """`<time>` with readable UTC (the browser's script rewrites it into local time) and
    how far from now it is, which the script leaves alone: the service's clock says it."""
    stamp = at.astimezone(UTC)
    readable = f"{stamp.day} {stamp:%b %Y, %H:%M} UTC"
    return Html(f'<time datetime="{time_text(stamp)}">{readable}</time> ({relative(at - now)})')


def relative(span: timedelta) -> str:
    """ "in 3 h 20 min", "15 min ago", "now": to the minute, the two largest units."""
    minutes = round(abs(span.total_seconds()) / 60)
    if minutes == 0:
        return "now"
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    units = [(days, "d"), (hours, "h"), (mins, "min")]
    first = next(place for place, (count, _) in enumerate(units) if count)
    said = " ".join(f"{count} {unit}" for count, unit in units[first : first + 2] if count)
    return f"in {said}" if span > timedelta(0) else f"{said} ago"


def page(
    status: int, title: str, *paragraphs: str, form: str | None = None, refused: bool = False
) -> HTMLResponse:
    """`paragraphs`: plain text (escaped here), `Html`, or a `Block` (its own paragraph);
    `form`: the button's label, if any, right after the text it answers (small print
    follows it); `refused`: the page says no (its colour differs)."""
    said = [text for text in paragraphs if not isinstance(text, Detail)]
    blocks = [text if isinstance(text, Block) else f"<p>{html(text)}</p>" for text in said]
    if form is not None:  # posts to this same address: the token is the credential
        blocks.append(f'<form method="post"><button type="submit">{escape(form)}</button></form>')
    blocks += [text for text in paragraphs if isinstance(text, Detail)]
    body = "\n".join(blocks)
    document = TEMPLATE.format(
        title=escape(title),
        heading=naming(title),
        body=body,
        style=STYLE,
        script=SCRIPT,
        tone="refused" if refused else "ok",
    )
    return HTMLResponse(document, status_code=status, headers=dict(PAGE_HEADERS))
