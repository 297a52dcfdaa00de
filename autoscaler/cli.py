"""Argument parsing only: each command hands over to the composition root or a reporter."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from autoscaler.api.static_tokens import read_token_file
from autoscaler.backtest.arguments import add_backtest_arguments
from autoscaler.client.commands import (
    COMMANDS,
    OneLineParser,
    add_commands,
    quiet_when_the_reader_leaves,
)
from autoscaler.client.commands import run as run_client
from autoscaler.client.next_steps import config_refused
from autoscaler.core.errors import ConfigError
from autoscaler.demo.run import add_demo_arguments
from autoscaler.domain.policy.checks import shadowed
from autoscaler.domain.program import PROGRAM
from autoscaler.settings.rules import build_policy
from autoscaler.settings.tree import Settings, load_settings

EXIT_BAD_CONFIG = 2


def main(argv: Sequence[str] | None = None) -> int:
    return quiet_when_the_reader_leaves(lambda: _command(argv))


def _command(argv: Sequence[str] | None) -> int:
    args = _parser().parse_command_line(argv)
    if args.command in COMMANDS:  # the client talks to a running service: no settings file
        return run_client(args)
    if args.command == "demo":  # the embedded default needs no settings file either
        from autoscaler.compose.demo import demo  # noqa: PLC0415 - lazy, see below

        return demo(args)
    try:  # refused when read, or while building (e.g. a static token file)
        return _run(args, load_settings(args.config))
    except ConfigError as exc:
        for line in config_refused(exc, config=args.config):
            print(f"error: {line}", file=sys.stderr)
        return EXIT_BAD_CONFIG


def _run(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "check-config":
        checked = _check_config(settings)
        if not (args.cluster or args.kubeconfig or args.context):
            return checked
        from autoscaler.compose.check_cluster import check_cluster  # noqa: PLC0415 - lazy

        return check_cluster(settings, kubeconfig=args.kubeconfig, context=args.context)
    if args.command == "recording-rules":
        from autoscaler.compose.recording_rules import recording_rules_text  # noqa: PLC0415

        print(recording_rules_text(settings, thanos=args.thanos), end="")
        return 0
    from autoscaler.compose.backtest import backtest  # noqa: PLC0415 - lazy, see below
    from autoscaler.compose.serve import serve  # noqa: PLC0415 - lazy, see below

    if args.command == "backtest":
        return backtest(settings, args)
    return serve(settings, kubeconfig=args.kubeconfig, context=args.context)


# The composition root (`autoscaler.compose`) is imported only by the commands that run the
# service ("lazy" above), so the client and `check-config` answer without loading the
# cluster, gRPC and web stacks.


def _parser() -> OneLineParser:
    parser = OneLineParser(
        prog=PROGRAM,
        description="Frees GPUs held by idle Kueue Workloads, judged from dcgm-exporter metrics.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("serve", "run the reconcile loop against the cluster until SIGTERM"),
        ("check-config", "validate a configuration file and print the effective settings"),
    ):
        command = commands.add_parser(name, help=text, description=text)
        command.add_argument("--config", type=Path, help="YAML configuration file")
        if name == "check-config":
            _add_cluster_arguments(command)
        else:
            _add_serve_cluster_arguments(command)
    rules = commands.add_parser(
        "recording-rules",
        help="print the recording rules file for the configured signals and slot",
        description="print the recording rules (docs/RECORDING-RULES.md) for the configured "
        "signals and slot, for a Prometheus `rule_files` entry or a Thanos Ruler",
    )
    rules.add_argument("--config", type=Path, help="YAML configuration file")
    rules.add_argument("--thanos", action="store_true", help="add partial_response_strategy: abort")
    backtest = commands.add_parser(
        "backtest", help="replay a policy over Prometheus history: what would it have done?"
    )
    backtest.add_argument("--config", type=Path, help="YAML configuration file")
    add_backtest_arguments(backtest)
    add_demo_arguments(
        commands.add_parser(
            "demo", help="watch the service work on a simulated cluster (no cluster needed)"
        )
    )
    add_commands(commands)
    return parser


def _add_cluster_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--cluster",
        action="store_true",
        help="also read the cluster as serve would (cluster.kubeconfig and cluster.context, "
        "or in-cluster): whether Kueue serves what the rules need; nothing is written",
    )
    command.add_argument(
        "--kubeconfig", type=Path, help="with --cluster: this kubeconfig instead (implies it)"
    )
    command.add_argument(
        "--context", help="with --cluster: this kubeconfig context instead (implies it)"
    )


def _add_serve_cluster_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="PATH",
        help="this kubeconfig instead of cluster.kubeconfig, $KUBECONFIG or ~/.kube/config "
        "(in a pod: the in-cluster service account when none is given)",
    )
    command.add_argument("--context", help="this kubeconfig context instead of cluster.context")


def _check_config(settings: Settings) -> int:
    """The effective settings on stdout; rules that can never match (an earlier rule selects
    all they select) as warnings on stderr: valid, but worth a look. The static token file
    is read as the service reads it, when it is here to read."""
    _check_static_tokens(settings)  # a ConfigError is an error: line and exit 2, in main
    for warning in shadowed(build_policy(settings).rules):
        print(f"warning: {warning}", file=sys.stderr)
    effective = settings.model_dump(mode="json", by_alias=True)
    print("# effective configuration (defaults filled in, environment applied)")
    print(yaml.safe_dump(effective, sort_keys=False), end="")
    return 0


def _check_static_tokens(settings: Settings) -> None:
    """Raises ConfigError for a static token file the service would refuse. Where the file is
    not (it is mounted from a Secret in the pod), a warning says it was not checked."""
    path = settings.api.auth.static_tokens_file
    if settings.api.auth.mode != "static" or path is None:
        return
    if not path.exists():
        print(
            f"warning: api.auth.staticTokensFile {path} is not here, so not checked; "
            "the service will not start if it is invalid",
            file=sys.stderr,
        )
        return
    read_token_file(path)
