"""The `backtest` command's arguments: the range, the variants, the output."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from pathlib import Path

from autoscaler.backtest.queues import add_queue_arguments
from autoscaler.domain.annotations import parse_time
from autoscaler.domain.durations import parse_duration
from autoscaler.settings.tree import PROMETHEUS_FORWARD, PROMETHEUS_URL_VARIABLE

CHART_WINDOWS = ("15m", "30m", "1h", "2h", "4h", "8h")


def add_backtest_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--prometheus-url",
        metavar="URL",
        help="the Prometheus or Thanos Querier to read (default: prometheus.url, or "
        f"${PROMETHEUS_URL_VARIABLE}), e.g. http://localhost:9090 after `{PROMETHEUS_FORWARD}`",
    )
    _add_range_arguments(parser)
    _add_variant_arguments(parser)
    _add_output_arguments(parser)
    add_queue_arguments(parser)


def _add_range_arguments(parser: argparse.ArgumentParser) -> None:
    when = parser.add_argument_group("range")
    when.add_argument(
        "--since",
        type=_duration,
        help="replay this far back from --end (default 7d; with --demo, the whole history)",
    )
    when.add_argument("--start", type=_time, help="RFC 3339 start (instead of --since)")
    when.add_argument("--end", type=_time, help="RFC 3339 end (default: now)")
    when.add_argument(
        "--step", type=_duration, help="time between decisions (default: the loop interval)"
    )
    when.add_argument(
        "--demo",
        action="store_true",
        help="replay a generated history of the demo's stories instead of Prometheus's "
        "(nothing else needs to run)",
    )


def _add_variant_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_argument_group("variants")
    what.add_argument(
        "--alternative",
        action="append",
        default=[],
        metavar="WINDOW[@PERCENT]",
        help="an alternative window and threshold, e.g. 2h or 30m@10 (repeat "
        "for more; default: half and double the window, double the threshold)",
    )
    what.add_argument(
        "--chart-windows",
        default=",".join(CHART_WINDOWS),
        metavar="LIST",
        help="windows charted at the policy's threshold (comma separated)",
    )
    what.add_argument(
        "--regret-horizon",
        type=_duration,
        default=timedelta(hours=2),
        help="GPUs busy again this soon after a deactivation: a regret (2h)",
    )
    what.add_argument(
        "--raycluster-label", help="series label naming the RayCluster (default: from pod names)"
    )


def _add_output_arguments(parser: argparse.ArgumentParser) -> None:
    out = parser.add_argument_group("output")
    out.add_argument("--output", choices=("table", "json"), default="table")
    out.add_argument(
        "--chart",
        type=Path,
        metavar="PATH.html",
        help="also write a self-contained HTML chart of GPU-hours by window",
    )
    out.add_argument(
        "--chunk",
        type=_duration,
        default=timedelta(hours=6),
        help="history read per query; bounds memory (default 6h)",
    )


def _duration(text: str) -> timedelta:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _time(text: str) -> datetime:
    parsed = parse_time(text)
    if parsed is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not an RFC 3339 time with a zone")
    return parsed.astimezone(UTC)
