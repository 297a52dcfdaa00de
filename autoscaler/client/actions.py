"""What each subcommand asks of the API, and how its answer is shown as a table.

Each action first checks its arguments (a missing namespace, a negative `--for`), before any
token is looked up or any request sent, then returns the call to make. So a usage mistake is
reported as one, even on a machine with no kubeconfig.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime, timedelta

from autoscaler.client import render, workload_views
from autoscaler.client.api import AutoscalerClient, Json
from autoscaler.domain.annotations import parse_time
from autoscaler.domain.durations import format_duration, parse_duration

TableView = Callable[[Json], str]
Shown = tuple[Json, TableView]
Call = Callable[[AutoscalerClient], Shown]
Plan = Callable[[argparse.Namespace], Call]


class UsageError(Exception):
    """The arguments cannot make a request; the message says what to change."""


def plan(args: argparse.Namespace) -> Call:
    """The checked call for the parsed command line."""
    return _PLANS[args.command](args)


def is_read(args: argparse.Namespace) -> bool:
    """Reads may go without a token when there is none to find (the API may answer them)."""
    if args.command == "breaker":
        return bool(args.breaker_action == "status")
    return args.command in {"status", "explain", "pauses", "decisions", "audit", "report"}


def _namespace(args: argparse.Namespace) -> str:
    if not args.namespace:
        raise UsageError(f"{args.command} needs -n/--namespace")
    return str(args.namespace)


def _duration(text: str | None, *, option: str = "--for") -> timedelta | None:
    if text is None:
        return None
    try:
        span = parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None
    if span <= timedelta(0):
        raise UsageError(f"{option}: {text!r} must be longer than zero")
    return span


def _until(text: str | None) -> datetime | None:
    if text is None:
        return None
    until = parse_time(text)
    if until is None:
        raise UsageError("--until needs an RFC 3339 time with a timezone, e.g. 2030-01-01T18:00Z")
    return until


def _scope(args: argparse.Namespace) -> str | None:
    if args.all == bool(args.namespace):
        raise UsageError(f"{args.command} needs either -n NAMESPACE or --all")
    return None if args.all else str(args.namespace)


def _status(args: argparse.Namespace) -> Call:
    if args.name:
        namespace = _namespace(args)
        return lambda client: (client.workload(namespace, args.name), workload_views.workload)
    return lambda client: (
        client.workloads(namespace=args.namespace, queue=args.queue, state=args.state),
        workload_views.workloads,
    )


def _explain(args: argparse.Namespace) -> Call:
    namespace = _namespace(args)
    return lambda client: (client.explain(namespace, args.name), workload_views.explanation)


def _exempt(args: argparse.Namespace) -> Call:
    namespace, span, until = _namespace(args), _duration(args.duration), _until(args.until)
    return lambda client: (
        client.exempt(namespace, args.name, duration=span, until=until, reason=args.reason),
        render.exemption,
    )


def _unexempt(args: argparse.Namespace) -> Call:
    namespace = _namespace(args)
    return lambda client: (client.unexempt(namespace, args.name), render.exemption)


def _target(args: argparse.Namespace) -> tuple[str, str]:
    """`NAMESPACE/NAME`, or `NAME` with -n."""
    namespace, slash, name = str(args.target).rpartition("/")
    if slash and args.namespace and args.namespace != namespace:
        raise UsageError(f"{args.target} names namespace {namespace}, -n says {args.namespace}")
    if not slash:
        namespace = str(args.namespace or "")
    if not namespace or not name:
        raise UsageError(f"{args.command} needs NAMESPACE/NAME (or NAME with -n)")
    return namespace, name


def _snooze(args: argparse.Namespace) -> Call:
    namespace, name = _target(args)
    if (args.duration is None) == (args.for_duration is None):
        raise UsageError("snooze needs its length once: DURATION or --for DURATION")
    if args.for_duration is not None:
        span = _duration(args.for_duration)
    else:
        span = _duration(args.duration, option="DURATION")
    assert span is not None  # one of the two is given
    return lambda client: (
        client.snooze(namespace, name, duration=span, reason=args.reason),
        render.snooze,
    )


def _unsnooze(args: argparse.Namespace) -> Call:
    namespace, name = _target(args)
    return lambda client: (client.unsnooze(namespace, name), render.snooze)


def _pauses(_args: argparse.Namespace) -> Call:
    return lambda client: (client.pauses(), render.pauses)


def _pause(args: argparse.Namespace) -> Call:
    scope = _scope(args)
    return lambda client: (client.pause(scope, reason=args.reason), render.pauses)


def _resume(args: argparse.Namespace) -> Call:
    scope = _scope(args)
    said = "the whole service" if scope is None else f"namespace {scope}"
    return lambda client: (client.resume(scope, reason=args.reason), render.resumed(said))


def _reactivate(args: argparse.Namespace) -> Call:
    namespace = _namespace(args)
    return lambda client: (
        client.reactivate(namespace, args.name, reason=args.reason),
        render.change,
    )


def _deactivate(args: argparse.Namespace) -> Call:
    namespace = _namespace(args)
    return lambda client: (
        client.deactivate(namespace, args.name, reason=args.reason),
        render.change,
    )


def _uncontest(args: argparse.Namespace) -> Call:
    namespace = _namespace(args)
    return lambda client: (client.uncontest(namespace, args.name), render.change)


def _records(view: TableView) -> Plan:
    """`decisions` and `audit`: the same trail, seen for its numbers or for who and why."""

    def records(args: argparse.Namespace) -> Call:
        return lambda client: (
            client.decisions(limit=args.limit, offset=args.offset, namespace=args.namespace),
            view,
        )

    return records


def _report(args: argparse.Namespace) -> Call:
    span = _duration(str(args.since), option="--since")
    assert span is not None
    since = format_duration(span)  # the API's one spelling, whatever spelling was typed
    return lambda client: (client.report(since=since, namespace=args.namespace), render.report)


def _breaker(args: argparse.Namespace) -> Call:
    if args.breaker_action == "reset":
        return lambda client: (client.reset_breaker(reason=args.reason), render.breaker_reset)
    return lambda client: (client.breaker(), render.breaker)


_PLANS: dict[str, Plan] = {
    "status": _status,
    "explain": _explain,
    "exempt": _exempt,
    "unexempt": _unexempt,
    "snooze": _snooze,
    "unsnooze": _unsnooze,
    "pauses": _pauses,
    "pause": _pause,
    "resume": _resume,
    "reactivate": _reactivate,
    "deactivate": _deactivate,
    "uncontest": _uncontest,
    "decisions": _records(render.decisions),
    "audit": _records(render.audit),
    "report": _report,
    "breaker": _breaker,
}
COMMANDS = tuple(_PLANS)
