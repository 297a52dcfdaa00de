"""The client subcommands: `status | exempt | unexempt | pause | resume | reactivate`.

`add_commands` adds them to the service's argument parser; `run` executes one parsed
command; `main` runs them on their own (`python -m autoscaler.client`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

import httpx

from autoscaler.client import render
from autoscaler.client.api import URL_VARIABLE, AutoscalerClient, ClientError, Json
from autoscaler.client.kubeconfig import KubeconfigError, kubeconfig_paths, kubeconfig_token
from autoscaler.domain.annotations import parse_time

COMMANDS = ("status", "exempt", "unexempt", "pause", "resume", "reactivate")
EXIT_REFUSED = 1  # the API said no (4xx/5xx)
EXIT_USAGE = 2  # bad arguments or no usable token
EXIT_UNREACHABLE = 3


def add_commands(commands: Any) -> None:
    """Add the client subcommands to an `add_subparsers()` result."""
    status = _command(commands, "status", "list workloads, or show one with its decision")
    status.add_argument("name", nargs="?", help="Workload or owner name (needs -n)")
    status.add_argument("--queue", help="only this LocalQueue")
    status.add_argument("--state", help="only this state (idle, busy, exempt, ...)")
    exempt = _command(commands, "exempt", "keep a workload from being deactivated for a while")
    exempt.add_argument("name", help="Workload or owner name, e.g. the RayCluster's")
    when = exempt.add_mutually_exclusive_group(required=True)
    when.add_argument("--for", dest="duration", help="how long, e.g. 4h, 90m, 2d")
    when.add_argument("--until", help="until this RFC 3339 time, e.g. 2030-01-01T18:00:00Z")
    exempt.add_argument("--reason", required=True, help="why (kept in annotations)")
    unexempt = _command(commands, "unexempt", "remove a workload's exemption")
    unexempt.add_argument("name", help="Workload or owner name")
    for verb, text in (("pause", "stop acting"), ("resume", "act again")):
        scope = _command(commands, verb, f"{text} in one namespace (-n), or everywhere (admin)")
        scope.add_argument("--all", action="store_true", help="the whole service (admins)")
        scope.add_argument("--reason", required=verb == "pause", default=f"{verb}d by CLI")
    again = _command(commands, "reactivate", "bring a deactivated workload back")
    again.add_argument("name", help="Workload or owner name")
    again.add_argument("--reason", required=True, help="why (kept in annotations)")


def run(
    args: argparse.Namespace,
    *,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    environ: Mapping[str, str] | None = None,
    transport: httpx.BaseTransport | None = None,
) -> int:
    try:
        token = args.token or _token(args, environ)
        with AutoscalerClient(args.server, token=token, transport=transport) as client:
            body, show = _ACTIONS[args.command](client, args)
    except (KubeconfigError, _UsageError) as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    except ClientError as exc:
        print(f"error: {exc}", file=err)
        for problem in exc.fields:
            print(f"  {problem.get('field')}: {problem.get('message')}", file=err)
        return EXIT_REFUSED if exc.status else EXIT_UNREACHABLE
    print(render.as_json(body) if args.output == "json" else show(body), file=out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="idle-gpu-autoscaler", description=__doc__)
    add_commands(parser.add_subparsers(dest="command", required=True))
    return run(parser.parse_args(argv))


class _UsageError(Exception):
    pass


def _command(commands: Any, name: str, text: str) -> argparse.ArgumentParser:
    command: argparse.ArgumentParser = commands.add_parser(name, help=text, description=text)
    command.add_argument("-n", "--namespace", help="the workload's namespace")
    command.add_argument(
        "--server", help=f"the service's URL (env {URL_VARIABLE}; default http://localhost:8080)"
    )
    command.add_argument("--token", help="bearer token; default: the kubeconfig context's")
    command.add_argument("--context", help="kubeconfig context; default: the current one")
    command.add_argument("-o", "--output", choices=("table", "json"), default="table")
    return command


def _token(args: argparse.Namespace, environ: Mapping[str, str] | None) -> str | None:
    """The kubeconfig token; reads go without one when there is no kubeconfig at all."""
    if args.command == "status" and not any(p.exists() for p in kubeconfig_paths(environ)):
        return None
    return kubeconfig_token(context=args.context, environ=environ)


def _namespace(args: argparse.Namespace) -> str:
    if not args.namespace:
        raise _UsageError(f"{args.command} needs -n/--namespace")
    return str(args.namespace)


Shown = tuple[Json, Callable[[Json], str]]


def _status(client: AutoscalerClient, args: argparse.Namespace) -> Shown:
    if args.name:
        return client.workload(_namespace(args), args.name), render.workload
    found = client.workloads(namespace=args.namespace, queue=args.queue, state=args.state)
    return found, render.workloads


def _exempt(client: AutoscalerClient, args: argparse.Namespace) -> Shown:
    until = parse_time(args.until) if args.until else None
    if args.until and until is None:
        raise _UsageError("--until needs an RFC 3339 time with a timezone, e.g. 2030-01-01T18:00Z")
    found = client.exempt(
        _namespace(args), args.name, duration=args.duration, until=until, reason=args.reason
    )
    return found, render.exemption


def _unexempt(client: AutoscalerClient, args: argparse.Namespace) -> Shown:
    return client.unexempt(_namespace(args), args.name), render.exemption


def _scope(args: argparse.Namespace) -> str | None:
    if args.all == bool(args.namespace):
        raise _UsageError(f"{args.command} needs either -n NAMESPACE or --all")
    return None if args.all else str(args.namespace)


def _pause(client: AutoscalerClient, args: argparse.Namespace) -> Shown:
    return client.pause(_scope(args), reason=args.reason), render.pauses


def _resume(client: AutoscalerClient, args: argparse.Namespace) -> Shown:
    return client.resume(_scope(args), reason=args.reason), render.pauses


def _reactivate(client: AutoscalerClient, args: argparse.Namespace) -> Shown:
    return client.reactivate(_namespace(args), args.name, reason=args.reason), render.change


_ACTIONS: dict[str, Callable[[AutoscalerClient, argparse.Namespace], Shown]] = {
    "status": _status,
    "exempt": _exempt,
    "unexempt": _unexempt,
    "pause": _pause,
    "resume": _resume,
    "reactivate": _reactivate,
}
