"""The Keep link the demo prints: signed with the run's own key, as the chart configures links
(`notifications.links.baseUrl` and `signingKeyFile`), for the last warning of the story's first
warned workload, pointing at the demo's own REST API. The browser test
(`test_keep_page_browser`) opens it from `demo --serve`."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

from autoscaler.compose.demo import DEMO_RECIPIENT, demo_parts, new_link_key
from autoscaler.demo.run import DemoOptions, play_demo
from autoscaler.engine.notify.links import LINK_PATH, LinkSigner

KEEP = "keep page:"


def test_the_demo_prints_after_its_story_the_link_its_first_warning_carried(
    tmp_path: Path,
) -> None:
    key = new_link_key(tmp_path)
    parts = demo_parts(link_key=key)
    out = io.StringIO()
    # Serving on for a moment: the endpoints and the link are printed only while they answer.
    options = DemoOptions(scenario="two-clusters", speed=None, interactive=False, duration=0.01)
    run = play_demo(
        options,
        build_service=parts.build_service,
        configure=parts.configure,
        extra_servers=parts.extra_servers,
        keep_link=parts.keep_link,
        out=out,
    )

    printed = out.getvalue().splitlines()
    [line] = [line for line in printed if line.startswith(KEEP)]
    assert printed.index(line) > printed.index("Summary of two-clusters (10:00–11:50, simulated)")
    url = line.removeprefix(KEEP).strip()
    [rest] = [row.removeprefix("REST: ") for row in printed if row.startswith("REST: ")]
    assert url.startswith(rest + LINK_PATH)  # the demo's own API serves it

    assert oct(key.stat().st_mode & 0o777) == "0o600"
    signer = LinkSigner(
        key=key.read_bytes().strip(), base_url=rest, ttl=timedelta(hours=24), choices=()
    )
    claim = signer.verify(url.rsplit("/", 1)[1], now=run.live.ended_at)
    [first] = [ref for ref, name in run.live.names.items() if name == "first-raycluster"]
    assert claim.workload == first
    assert claim.warned_at == datetime(2026, 3, 2, 11, 20, tzinfo=UTC)  # its last warning
    assert claim.warned_at == run.live.watched["first-raycluster"].warnings[-1]
    assert claim.recipient == DEMO_RECIPIENT
    assert claim.snooze == timedelta(hours=4)  # the shortest choice, the first button
