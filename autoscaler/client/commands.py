"""The client subcommands: one for every call of the Python client.

`add_commands` adds them to the service's argument parser; `run` executes one parsed
command; `main` runs them on their own (`python -m autoscaler.client`). What each command
asks of the API is in `actions.py`, how answers look in `render.py`.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

import httpx

from autoscaler.client import next_steps, render
from autoscaler.client.actions import COMMANDS, UsageError, is_read, plan
from autoscaler.client.api import DEFAULT_URL, URL_VARIABLE, AutoscalerClient, ClientError
from autoscaler.client.credentials import TOKEN_VARIABLE, TokenSources, find_token
from autoscaler.client.kubeconfig import KubeconfigError
from autoscaler.domain.program import PROGRAM

__all__ = [
    "COMMANDS",
    "EXIT_CODES",
    "OneLineParser",
    "add_commands",
    "join_option_values",
    "main",
    "run",
]

EXIT_DONE = 0
EXIT_REFUSED = 1  # the API said no (4xx/5xx), or found nothing: the reason is printed
EXIT_USAGE = 2  # bad arguments or no usable token (argparse uses 2 as well)
EXIT_UNREACHABLE = 3  # no answer from the service
EXIT_READER_GONE = 128 + signal.SIGPIPE  # the output's reader left (`status | head`)
EXIT_CODES = (
    "exit codes: 0 done, 1 refused by the API or not found (the reason is printed),\n"
    "  2 bad usage or no usable token, 3 the service could not be reached,\n"
    "  141 the output's reader left (`status | head`)"
)
TOKEN_ORDER = (
    f"token, the first found: --token, --token-file, ${TOKEN_VARIABLE}, the kubeconfig\n"
    "  context (a static token, a token file, or an exec plugin: EKS, GKE, AKS, OIDC)"
)
WORKLOAD = "the Workload's name or its owner's, e.g. the RayCluster's (needs -n)"
TARGET = "the workload as namespace/name (its Workload's or its owner's name)"
REASON = "why, in a sentence (kept in the annotations and the audit trail)"
# `--for -1h` must reach the duration parser (which refuses it, saying why): argparse takes
# a value starting with "-" for an option unless it is attached, as in `--for=-1h`.
RAW = argparse.RawDescriptionHelpFormatter  # keeps the epilog's lines as written
_SIGNED_VALUE = re.compile(r"^-[0-9.]")
_VALUE_OPTIONS = ("--for",)
EPILOG = f"{TOKEN_ORDER}\n{EXIT_CODES}"  # ends every command's --help


def add_commands(commands: Any) -> None:
    """Add the client subcommands to an `add_subparsers()` result."""
    _add_reads(commands)
    _add_workload_changes(commands)
    _add_pauses(commands)
    _add_admin(commands)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a mistake is one `error:` line naming the `--help` to read, not the
    usage dump (the usage of every command, for a stray word at the top level)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"error: {next_steps.usage_error(self.prog, message)}\n")

    def parse_command_line(self, argv: Sequence[str] | None = None) -> argparse.Namespace:
        """`argv` (None: the process's own arguments) parsed, after what argparse would
        misread (`--for 5 hours`) is refused in one line and a negative value is joined to
        its option."""
        words = sys.argv[1:] if argv is None else argv
        _check_argv(words)
        return self.parse_args(join_option_values(words))


def _check_argv(argv: Sequence[str]) -> None:
    """Mistakes argparse would misread, said before it reads them (one line, exit 2)."""
    written_apart = next_steps.durations_written_apart(argv)
    if written_apart is not None:
        sys.stderr.write(f"error: {written_apart}\n")
        raise SystemExit(EXIT_USAGE)


def join_option_values(argv: Sequence[str]) -> list[str]:
    """`--for -1h` → `--for=-1h`, so a negative duration is refused by the parser's message."""
    joined: list[str] = []
    for arg in argv:
        if joined and joined[-1] in _VALUE_OPTIONS and _SIGNED_VALUE.match(arg):
            joined[-1] = f"{joined[-1]}={arg}"
        else:
            joined.append(arg)
    return joined


def run(
    args: argparse.Namespace,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    environ: Mapping[str, str] | None = None,
    transport: httpx.BaseTransport | None = None,
) -> int:
    """Exit code as documented in EXIT_CODES; answers to `out`, errors to `err` (by default
    the streams in force when called, so a caller's redirection holds)."""
    out, err = out or sys.stdout, err or sys.stderr
    namespace = _named_namespace(args)
    try:
        call = plan(args)
        sources = TokenSources(args.token, args.token_file, args.context)
        token = find_token(sources, environ=environ, optional=is_read(args))
        with AutoscalerClient(args.server, token=token, transport=transport) as client:
            body, table_view = call(client)
    except (KubeconfigError, UsageError) as exc:
        print(f"error: {render.terminal_safe(str(exc))}", file=err)
        return EXIT_USAGE
    except ClientError as exc:
        said = next_steps.refusal(exc, namespace=namespace)
        print(f"error: {render.terminal_safe(said)}", file=err)
        return EXIT_REFUSED if exc.status else EXIT_UNREACHABLE
    if _namespace_unknown(args, body):
        said = next_steps.empty_namespace(str(args.namespace))
        print(f"error: {render.terminal_safe(said)}", file=err)
        return EXIT_REFUSED  # as a workload the service does not know (404)
    print(render.shown(body, table_view, args.output), file=out)
    return EXIT_DONE


def _named_namespace(args: argparse.Namespace) -> str | None:
    """The namespace the command names: `-n`, or the NAMESPACE of a NAMESPACE/NAME target."""
    named = getattr(args, "namespace", None)
    target = str(getattr(args, "target", "") or "")
    return str(named) if named else (target.rpartition("/")[0] or None)


def _namespace_unknown(args: argparse.Namespace, body: Any) -> bool:
    """`status -n NS` with no filter and no workload: a namespace the service knows nothing
    of, or one the caller cannot read; a filter (--queue, --state) may rightly match none."""
    if args.command != "status" or args.name or not args.namespace:
        return False
    return not (args.queue or args.state or body.get("items"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog=PROGRAM,
        description=__doc__.split("\n")[0],
        epilog=EPILOG,
        formatter_class=RAW,
    )
    add_commands(parser.add_subparsers(dest="command", required=True))
    return quiet_when_the_reader_leaves(lambda: run(parser.parse_command_line(argv)))


def quiet_when_the_reader_leaves(command: Callable[[], int]) -> int:
    """`command`'s exit code; 141 (128 + SIGPIPE, what a shell shows for `git log | head`)
    when the reader of its output left (`status | head`): ended quietly, as other tools do,
    by the recipe of Python's "Note on SIGPIPE" (signal module docs), so nothing more is
    flushed and no traceback is printed. Both entry points run their command through it."""
    try:
        code = command()
        sys.stdout.flush()  # a reader that left shows here, not in the interpreter's exit
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_READER_GONE
    return code


def _command(commands: Any, name: str, text: str) -> argparse.ArgumentParser:
    command: argparse.ArgumentParser = commands.add_parser(
        name,
        help=text,
        description=text,
        epilog=EPILOG,
        formatter_class=RAW,
    )
    _add_common_options(command)
    return command


def _add_common_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--server",
        metavar="URL",
        help=f"the service's URL (default: ${URL_VARIABLE}, else {DEFAULT_URL})",
    )
    command.add_argument("--token", help="bearer token (shows in shell history: prefer the next)")
    command.add_argument(
        "--token-file", type=Path, metavar="PATH", help="read the bearer token from this file"
    )
    command.add_argument("--context", help="kubeconfig context (default: the current one)")
    command.add_argument(
        "-o",
        "--output",
        choices=render.OUTPUTS,
        default="table",
        help="answer as a table (default), JSON or YAML",
    )


def _namespace_option(command: argparse.ArgumentParser, text: str) -> None:
    command.add_argument("-n", "--namespace", help=text)


def _named_workload(commands: Any, name: str, text: str) -> argparse.ArgumentParser:
    command = _command(commands, name, text)
    command.add_argument("name", metavar="NAME", help=WORKLOAD)
    _namespace_option(command, "the workload's namespace")
    return command


def _add_reads(commands: Any) -> None:
    status = _command(commands, "status", "list workloads, or show one with its decision")
    status.add_argument("name", metavar="NAME", nargs="?", help=WORKLOAD)
    _namespace_option(status, "only this namespace (required with NAME)")
    status.add_argument("--queue", help="only this LocalQueue")
    status.add_argument(
        "--state",
        help="only this state (idle, not-running, busy, loading, idle-held, unknown, exempt, ...)",
    )
    _named_workload(
        commands, "explain", "which rule a workload falls under, and why earlier rules did not"
    )
    _command(commands, "pauses", "list the pauses in force, who set them and why")
    for name, text in (
        ("decisions", "the loop's decisions and actions with their numbers, newest first"),
        ("audit", "the audit trail: who did what, and why, newest first"),
    ):
        records = _command(commands, name, text)
        _namespace_option(records, "only records about this namespace")
        records.add_argument(
            "--limit", type=int, default=50, help="records per page, 1-200 (default 50)"
        )
        records.add_argument(
            "--offset", type=int, default=0, help="records to skip, newest first (default 0)"
        )
    report = _command(
        commands, "report", "GPU-hours held idle and reclaimed, waits shortened, regrets"
    )
    _namespace_option(report, "only this namespace")
    report.add_argument(
        "--since", default="7d", metavar="DURATION", help="how far back: 24h, 7d (default 7d)"
    )


def _add_workload_changes(commands: Any) -> None:
    exempt = _named_workload(
        commands, "exempt", "keep a workload from being deactivated for a while"
    )
    when = exempt.add_mutually_exclusive_group(required=True)
    when.add_argument(
        "--for",
        dest="duration",
        metavar="DURATION",
        help="how long: 4h, 90m, 1h30m, 2d (as Kubernetes writes durations)",
    )
    when.add_argument("--until", help="until this RFC 3339 time, e.g. 2030-01-01T18:00:00Z")
    exempt.add_argument("--reason", required=True, help=REASON)
    _named_workload(commands, "unexempt", "remove a workload's exemption")
    _add_snoozes(commands)
    again = _named_workload(commands, "reactivate", "bring a deactivated workload back")
    again.add_argument("--reason", required=True, help=REASON)


def _add_snoozes(commands: Any) -> None:
    for verb, text in (
        ("snooze", "keep a warned workload running: push its planned stop back"),
        ("unsnooze", "remove a workload's snooze (a stop still needs a fresh warning)"),
    ):
        command = _command(commands, verb, text)
        command.add_argument("target", metavar="NAMESPACE/NAME", help=TARGET)
        _namespace_option(command, "the workload's namespace, when NAME alone is given")
        if verb == "snooze":
            _snooze_length(command)
            command.add_argument("--reason", default="snoozed with the CLI", help=REASON)


def _snooze_length(command: argparse.ArgumentParser) -> None:
    """`snooze NS/NAME 4h`, or `--for 4h` as `exempt` takes it: one of the two (checked
    in `actions`). Not a `nargs="?"` positional: argparse (before 3.12) gives that one an
    empty value at once, so `snooze NAME -n NS 4h` would leave 4h unparsed."""
    how_long = "how long: 4h, 90m, 1h30m (clipped to the rule's longest snooze)"
    length = command.add_argument("duration", metavar="[DURATION]", help=f"{how_long}; or --for")
    length.required = False
    command.add_argument("--for", dest="for_duration", metavar="DURATION", help=how_long)


def _add_pauses(commands: Any) -> None:
    for verb, text in (("pause", "stop acting"), ("resume", "act again")):
        scope = _command(commands, verb, f"{text} in one namespace (-n), or everywhere (--all)")
        _namespace_option(scope, f"{verb} this namespace only")
        scope.add_argument("--all", action="store_true", help=f"{verb} the whole service (admin)")
        scope.add_argument(
            "--reason",
            required=verb == "pause",
            default=f"{verb}d by CLI",
            help=REASON + ("" if verb == "pause" else f" (default: {verb}d by CLI)"),
        )


def _add_admin(commands: Any) -> None:
    now = _named_workload(
        commands, "deactivate", "deactivate a workload now, whatever its usage (admin)"
    )
    now.add_argument("--reason", required=True, help=REASON)
    _named_workload(
        commands,
        "uncontest",
        "clear a workload's contested mark, so the loop may deactivate it again (admin)",
    )
    text = "the mass-idle circuit breaker: show it, or close it now (admin)"
    breaker = commands.add_parser(
        "breaker", help=text, description=text, epilog=EXIT_CODES, formatter_class=RAW
    )
    actions = breaker.add_subparsers(dest="breaker_action", required=True, metavar="ACTION")
    for action, action_text in (
        ("status", "show whether the breaker holds every deactivation, since when and why"),
        ("reset", "close the breaker now; deactivations resume next cycle (admin)"),
    ):
        leaf = _command(actions, action, action_text)
        if action == "reset":
            leaf.add_argument("--reason", required=True, help=REASON)
