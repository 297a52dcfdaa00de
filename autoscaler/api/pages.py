"""The small HTML pages a "keep it" link opens in a browser: the confirm page (GET, which
changes nothing), the answer to its button (POST) and the refusals.

No script, no style, no outside resource: the strict CSP forbids all of them, and the form
may post only back to this service. Pages are never cached (`no-store`: the token is in the
address) and every value is HTML-escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from fastapi.responses import HTMLResponse

PAGE_HEADERS: Mapping[str, str] = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Robots-Tag": "noindex, nofollow",
}
TEMPLATE = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="robots" content="noindex">
<title>{title}</title></head>
<body>
<h1>{title}</h1>
{body}
</body>
</html>
"""


def page(status: int, title: str, *paragraphs: str, form: str | None = None) -> HTMLResponse:
    """`paragraphs` are plain text (escaped here); `form`: the button's label, if any."""
    body = "\n".join(f"<p>{escape(text)}</p>" for text in paragraphs)
    if form is not None:  # posts to this same address: the token is the credential
        body += f'\n<form method="post"><button type="submit">{escape(form)}</button></form>'
    html = TEMPLATE.format(title=escape(title), body=body)
    return HTMLResponse(html, status_code=status, headers=dict(PAGE_HEADERS))
