"""The APScheduler job around the reconcile pass.

One job, `max_instances=1` and coalescing, so a slow cycle is never overlapped or queued
twice; the first run is at start-up. This is the one place with a broad `except`: a cycle
that crashes is logged and counted, and the next cycle runs as usual.

A cycle runs with the cyclic garbage collector paused. Its reads decode megabytes of
Prometheus JSON into short-lived lists (acyclic: reference counting frees them), and the
allocations set off full collections that found nothing to collect, yet each held the GIL for
about 100 ms, several times a cycle: every REST and KEDA answer waited (issue 18, measured
against `serve` with 1,000 workloads). After the cycle the collector runs as usual and finds
whatever cycles were made meanwhile.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.background import BackgroundScheduler

JOB_ID = "reconcile"


class LoopRunner:
    def __init__(
        self,
        *,
        run_cycle: Callable[[], object],
        interval: timedelta,
        logger: logging.Logger,
        on_crash: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._run_cycle = run_cycle
        self._interval = interval
        self._log = logger
        self._on_crash = on_crash
        self._scheduler = BackgroundScheduler(timezone=UTC)
        self.crashes = 0

    def start(self) -> None:
        self._scheduler.add_job(
            self._guarded_cycle,
            trigger="interval",
            seconds=self._interval.total_seconds(),
            id=JOB_ID,
            max_instances=1,
            coalesce=True,
            next_run_time=datetime.now(UTC),
        )
        self._scheduler.start()

    def stop(self) -> None:
        """Wait for a running cycle to finish (no half-done action), then stop."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=True)

    def _guarded_cycle(self) -> None:
        try:
            with collector_paused():
                self._run_cycle()
        except Exception as exc:  # the one throttling boundary: log, count, go on
            self.crashes += 1
            self._log.exception("reconcile cycle crashed (%d so far)", self.crashes)
            if self._on_crash is not None:
                self._on_crash(exc)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside, back as it was after (whatever is raised)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
