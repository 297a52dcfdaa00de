"""The Keep page as a person opens it: the real `idle-gpu-autoscaler demo --serve` prints a
Keep link, and headless Chromium (from Debian) opens it at a phone's width (390 x 844) and a
desktop's (1280 x 800), in a time zone that is not UTC.

Checked: the DOM after the page's script ran names the owner people know and shows the stop
in the browser's local time; at 390 px nothing runs into the right edge of the screenshot
(read with zlib: the rightmost columns are the page's background, which an overflowing box
covers); the command to bring it back is a block whose text is the command, one span per
token, and laid out no token of it is split across lines (a probe script measures each
token's line boxes, also in a copy of the block squeezed to 25 characters). A deliberately
broken variant (no wrap, no token spans kept whole) shows both checks fail then. The
screenshots stay in pytest's temporary folder, to look at.

Skipped with the reason when Chromium is missing; with REQUIRE_REAL=1 (CI) that fails instead.
"""

from __future__ import annotations

import html
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO
from zoneinfo import ZoneInfo

import httpx
import pytest

from tests.support.png import Image, png_size, read_png
from tests.support.real_parts import missing

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 30.0
SERVING = "serving until Ctrl-C"
KEEP = "keep page:"
ZONE = "Asia/Kolkata"  # UTC+05:30: a local time that cannot pass for UTC
PHONE, DESKTOP = (390, 844), (1280, 800)
EDGE = 6  # px at the right edge that only the page's background may fill (the body pads 16)
REACTIVATE = 'idle-gpu-autoscaler reactivate -n demo first-raycluster --reason "back to work"'
COMMAND = re.compile(r'<p class="command"><code>(.*?)</code></p>')
KEEP_TOKENS_WHOLE = ".command span{display:inline-block;max-width:100%}"
# Appended to a copy of the page (a file: no CSP there): for each command block, the words of
# its text whose characters lie on more than one line, written into the DOM to be read back.
PROBE = """<script>
const split = [];
for (const block of document.querySelectorAll("p.command code")) {
  const chars = [], walk = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
  for (let node = walk.nextNode(); node; node = walk.nextNode())
    for (let i = 0; i < node.data.length; i++) chars.push([node, i]);
  for (const word of block.textContent.matchAll(/\\S+/g)) {
    const range = document.createRange(), last = chars[word.index + word[0].length - 1];
    range.setStart(...chars[word.index]);
    range.setEnd(last[0], last[1] + 1);
    const lines = new Set([...range.getClientRects()].map((box) => Math.round(box.top)));
    if (lines.size > 1) split.push(word[0]);
  }
  block.dataset.copied = block.textContent;
}
document.body.dataset.split = split.join(" ");
</script>"""

pytestmark = pytest.mark.slow


def require_chromium() -> str:
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    if found is None:
        missing(
            "chromium is not installed (apt-get install chromium): the Keep page's test needs it"
        )
    return found


def _drain(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


@pytest.fixture(scope="module")
def keep_url() -> Iterator[str]:
    """The Keep link `demo --serve` prints, while the demo serves it."""
    require_chromium()
    command = [
        sys.executable,
        "-m",
        "autoscaler",
        "demo",
        "--speed",
        "max",
        "--non-interactive",
        "--serve",
    ]
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_drain, args=(process.stdout, lines), daemon=True).start()
    try:
        url, printed = None, []
        deadline = time.monotonic() + DEADLINE_S
        while True:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert line is not None, "the demo ended early:\n" + "".join(printed)
            printed.append(line)
            if line.startswith(KEEP):
                url = line[len(KEEP) :].strip()
            if line.startswith(SERVING):
                break
        assert url is not None, "no Keep link printed:\n" + "".join(printed)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


@dataclass(frozen=True)
class Opened:
    dom: str  # after the page's script ran
    shot: Path  # the screenshot, a PNG of the window's size


def chromium(url: str, *, size: tuple[int, int], folder: Path) -> Opened:
    """`url` as Chromium shows it in a window of `size`: its DOM and a screenshot."""
    shot = folder / f"keep-{size[0]}.png"
    profile = folder / f"profile-{size[0]}"
    args = [
        require_chromium(),
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", "--lang=en-US", "--hide-scrollbars",
        f"--window-size={size[0]},{size[1]}",
        f"--screenshot={shot}", "--dump-dom", url,
    ]  # fmt: skip
    env = {**os.environ, "TZ": ZONE, "LANG": "en_US.UTF-8"}
    done = subprocess.run(
        args, capture_output=True, text=True, timeout=DEADLINE_S, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return Opened(dom=done.stdout, shot=shot)


@pytest.fixture(scope="module")
def phone(keep_url: str, tmp_path_factory: pytest.TempPathFactory) -> Opened:
    return chromium(keep_url, size=PHONE, folder=tmp_path_factory.mktemp("phone"))


@pytest.fixture(scope="module")
def desktop(keep_url: str, tmp_path_factory: pytest.TempPathFactory) -> Opened:
    return chromium(keep_url, size=DESKTOP, folder=tmp_path_factory.mktemp("desktop"))


def edge_intruders(image: Image) -> list[tuple[int, int]]:
    """Pixels in the rightmost EDGE columns that are not the page's background (its top
    right corner): where content reaches the right edge, or goes past it."""
    background = image.pixel(image.width - 1, 0)
    return [
        (x, y)
        for y in range(image.height)
        for x in range(image.width - EDGE, image.width)
        if image.pixel(x, y) != background
    ]


def test_the_demos_keep_link_opens_a_page_naming_the_owner_in_local_time(
    phone: Opened,
) -> None:
    dom = phone.dom

    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in dom
    heading = re.search(r"<h1>(.*?)</h1>", dom)
    assert heading is not None
    assert (
        re.sub("<[^>]+>", "", heading[1]) == "RayCluster demo/first-raycluster was already stopped"
    )
    assert "Its Kueue Workload: demo/raycluster-first-raycluster-" in dom  # the detail
    [block] = COMMAND.findall(dom)  # the next step: one span per token, spaces between
    assert re.fullmatch(r"<span>[^<>]+</span>(?: <span>[^<>]+</span>)*", block), block
    assert html.unescape(re.sub("<[^>]+>", "", block)) == REACTIVATE
    stamp = re.search(r'<time datetime="([^"]+)" title="([^"]+)">([^<]+)</time>', dom)
    assert stamp is not None, dom  # the script ran: it keeps the UTC text as the title
    at, utc_text, local_text = datetime.fromisoformat(stamp[1]), stamp[2], stamp[3]
    local = at.astimezone(ZoneInfo(ZONE))
    assert utc_text.endswith("UTC") and f"{at:%H:%M}" in utc_text
    assert f"{local:%H:%M}" in local_text and "GMT+5:30" in local_text
    assert f"{local:%b} {local.day}, {local.year}" in local_text


def test_the_keep_page_fits_a_phone_and_reads_on_a_desktop(phone: Opened, desktop: Opened) -> None:
    image = read_png(phone.shot.read_bytes())
    assert (image.width, image.height) == PHONE
    assert edge_intruders(image) == []
    assert "RayCluster" in desktop.dom and "GMT+5:30" in desktop.dom
    assert png_size(desktop.shot.read_bytes()) == DESKTOP


@dataclass(frozen=True)
class Probed:
    split: str  # the command's words laid out on more than one line, space-separated
    copied: list[str]  # each command block's text, as a copy takes it
    shot: Path


def probed(page: str, *, folder: Path) -> Probed:
    """`page` opened at a phone's width with the probe, beside a copy of its command block
    squeezed to 25 characters (where "first-raycluster" meets the line's end)."""
    [block] = COMMAND.finditer(page)
    squeezed = block[0].replace("<code>", '<code style="width:25ch">')
    copy = folder / "probed.html"
    copy.write_text(
        page.replace(block[0], block[0] + squeezed).replace("</body>", PROBE + "</body>")
    )
    opened = chromium(copy.as_uri(), size=PHONE, folder=folder)
    split = re.search(r'<body data-split="([^"]*)">', opened.dom)
    assert split is not None, opened.dom
    copied = [html.unescape(text) for text in re.findall(r'data-copied="([^"]*)"', opened.dom)]
    return Probed(split=split[1], copied=copied, shot=opened.shot)


def test_the_command_copies_whole_and_no_token_of_it_is_split_on_a_phone(
    keep_url: str, tmp_path: Path
) -> None:
    page = httpx.get(keep_url, timeout=DEADLINE_S).text
    seen = probed(page, folder=tmp_path)
    assert seen.copied == [REACTIVATE, REACTIVATE]
    assert seen.split == ""
    assert edge_intruders(read_png(seen.shot.read_bytes())) == []


def test_the_checks_see_a_page_that_overflows_and_a_command_split_at_a_hyphen(
    keep_url: str, tmp_path: Path
) -> None:
    """The same page with a name no browser can break, without the style's wrap and with
    the command's tokens free to break as plain text does (as the page once had them): the
    checks must fail, or they prove nothing above."""
    page = httpx.get(keep_url, timeout=DEADLINE_S).text
    unbreakable = "x" * 90
    for kept in ("h1,p{overflow-wrap:anywhere}", "<wbr>first-raycluster</span>", KEEP_TOKENS_WHOLE):
        assert kept in page
    variant = (
        page.replace("h1,p{overflow-wrap:anywhere}", "")
        .replace("<wbr>first-raycluster</span>", f"<wbr>{unbreakable}</span>")
        .replace(KEEP_TOKENS_WHOLE, "")
    )
    seen = probed(variant, folder=tmp_path)

    assert edge_intruders(read_png(seen.shot.read_bytes())) != []
    assert "first-raycluster" in seen.split.split()  # "first-" ends a squeezed line
