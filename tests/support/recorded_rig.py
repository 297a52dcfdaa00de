"""A Prometheus of its own holding the adapter's test corpus raw and recorded.

The raw history is `prometheus_adapter`'s (tests/support/prom_histories.py) plus `lone-burst`,
idle but for one slot, backfilled as the session's is and extended `AFTER` past `end` so that
reads after the recordings stop still find raw data. The recorded series are what the
generated rules file (recording_rules.py, for the default settings) records: promtool
evaluates it against this very server over the `RECORDED` span before `end`
(`create-blocks-from rules`, once a minute at the group's own offset into the minute, as a
ruler would), and the server is restarted to load those blocks. The span sits inside one of
promtool's 2 h blocks (`rig_end`): at a block boundary promtool skips the evaluation that
falls in the boundary's last second, a fleet-wide hole the read would rightly read raw.
A server of its own, since the session's serves live data that a restart would interrupt.
"""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

from autoscaler.adapters.prometheus.recording_rules import rules_file
from autoscaler.settings.tree import Settings
from tests.support.prom import Profile, PrometheusServer, require_binaries
from tests.support.prom_histories import Backfill, backfill, prometheus_adapter, worker

M, H = 60, 3600
AFTER = 90 * M  # raw history after the recordings stop
RECORDED = 100 * M  # recordings before `end`: the reach of a one-hour view and more
BLOCK = 2 * H  # promtool's block length for rules
BURST_AGO = 25 * M  # lone-burst is busy in the slot ending this long before `end`


def rig_end(now: int) -> int:
    """A whole minute, AFTER and more in the past, with its RECORDED span in one 2 h block."""
    block_start = (now - AFTER - 2 * M - BLOCK) // BLOCK * BLOCK
    return block_start + BLOCK - M


def lone_burst(end: int) -> Backfill:
    """Idle but for two busy samples in the one slot ending `end - BURST_AGO`."""
    slot_end = end - BURST_AGO
    profile = Profile.idle().level(95.0, start=slot_end - 30, end=slot_end - 14)
    return Backfill([worker("lone-burst").history(profile)], start=end - 3 * H, end=end + AFTER)


def start_recorded_rig(workdir: Path, *, end: int) -> PrometheusServer:
    """The server, started, with the raw corpus up to end + AFTER and the recordings up to end."""
    binaries = require_binaries()
    server = PrometheusServer(workdir, binaries=binaries, admin_api=True)
    parts = [replace(part, end=part.end + AFTER) for part in prometheus_adapter(end)]
    backfill([*parts, lone_burst(end)], server.data_dir, promtool=binaries.promtool)
    server.start(wait_for_targets=False)
    try:
        record_rules(server, workdir=workdir, start=end - RECORDED, end=end)
    except RuntimeError:
        server.stop()
        raise
    server.restart(wait_for_targets=False)
    return server


def record_rules(server: PrometheusServer, *, workdir: Path, start: int, end: int) -> None:
    """The generated rules file (default settings) evaluated over [start, end] against the
    running `server` by `promtool tsdb create-blocks-from rules`, into its data directory:
    what a ruler would have recorded. The blocks load when the server restarts."""
    settings = Settings()
    rules = workdir / "rules.yaml"
    rules.write_text(
        rules_file(settings.prometheus.signals, slot=settings.policy.slot, thanos=False)
    )
    command = [
        str(require_binaries().promtool),
        "tsdb",
        "create-blocks-from",
        "rules",
        "--quiet",
        f"--start={start}",
        f"--end={end}",
        f"--url={server.url}",
        f"--output-dir={server.data_dir}",
        str(rules),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=workdir)
    if done.returncode != 0:
        raise RuntimeError(f"promtool rules backfill failed: {done.stderr[-2000:]}")
