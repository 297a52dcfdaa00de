"""The command line covers the Python client: a subcommand with help for every call, help
for every option, one order for finding a token, and one plain line per error."""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path

import pytest

from autoscaler.cli import main as console_main
from autoscaler.client import AutoscalerClient, KubeconfigError
from autoscaler.client.commands import COMMANDS, add_commands, join_option_values
from autoscaler.client.credentials import TokenSources, find_token

# Each public call of the Python client → the subcommand that makes it.
SUBCOMMAND_OF_CALL = {
    "workloads": ("status",),
    "workload": ("status",),
    "explain": ("explain",),
    "exempt": ("exempt",),
    "unexempt": ("unexempt",),
    "snooze": ("snooze",),
    "unsnooze": ("unsnooze",),
    "pauses": ("pauses",),
    "pause": ("pause",),
    "resume": ("resume",),
    "reactivate": ("reactivate",),
    "deactivate": ("deactivate",),
    "decisions": ("decisions",),
    "breaker": ("breaker", "status"),
    "reset_breaker": ("breaker", "reset"),
    "uncontest": ("uncontest",),
    "report": ("report",),
}
NOT_CALLS = {"close", "from_kubeconfig", "from_environment"}


def parser() -> argparse.ArgumentParser:
    built = argparse.ArgumentParser(prog="idle-gpu-autoscaler")
    add_commands(built.add_subparsers(dest="command", required=True))
    return built


def leaf_parsers(root: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every subcommand's own parser, `breaker status` and `breaker reset` included."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in root._actions:  # argparse keeps subcommands nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                children = leaf_parsers(sub)
                found.update({f"{name} {c}": p for c, p in children.items()} or {name: sub})
    return found


def test_every_call_of_the_python_client_has_a_subcommand() -> None:
    calls = {
        name
        for name, member in inspect.getmembers(AutoscalerClient)
        if not name.startswith("_") and callable(member)
    } - NOT_CALLS
    assert calls == set(SUBCOMMAND_OF_CALL), "a new client call needs a subcommand"
    leaves = leaf_parsers(parser())
    for words in SUBCOMMAND_OF_CALL.values():
        assert " ".join(words) in leaves
        assert leaves[" ".join(words)].description
    assert set(COMMANDS) == {name.split()[0] for name in leaves}


@pytest.mark.parametrize("name", sorted(leaf_parsers(parser())))
def test_every_option_of_every_subcommand_has_help_and_the_output_choices(name: str) -> None:
    command = leaf_parsers(parser())[name]
    unexplained = [a.dest for a in command._actions if not a.help]
    assert unexplained == []
    (output,) = [a for a in command._actions if a.dest == "output"]
    assert (output.choices, output.default) == (("table", "json", "yaml"), "table")
    assert "exit codes: 0 done, 1 refused by the API" in (command.epilog or "")


@pytest.mark.parametrize(
    ("sources", "environ_token", "expected"),
    [
        pytest.param(TokenSources(token="flag"), "env", "flag", id="token-flag-first"),
        pytest.param(TokenSources(token_file=Path("FILE")), "env", "file", id="then-token-file"),
        pytest.param(TokenSources(), "env", "env", id="then-IGA_TOKEN"),
        pytest.param(TokenSources(), None, "kubeconfig", id="then-the-kubeconfig"),
    ],
)
def test_a_token_is_found_in_one_order(
    tmp_path: Path, sources: TokenSources, environ_token: str | None, expected: str
) -> None:
    (tmp_path / "token").write_text("file\n")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://k8s.example:6443'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
        "users: [{name: u, user: {token: kubeconfig}}]\n"
    )
    environ = {"KUBECONFIG": str(kubeconfig)}
    if environ_token:
        environ["IGA_TOKEN"] = environ_token
    if sources.token_file is not None:
        sources = TokenSources(token_file=tmp_path / "token")
    assert find_token(sources, environ=environ) == expected


def test_a_read_goes_without_a_token_only_when_none_is_anywhere(tmp_path: Path) -> None:
    nothing = {"KUBECONFIG": str(tmp_path / "missing")}
    assert find_token(TokenSources(), environ=nothing, optional=True) is None
    with pytest.raises(KubeconfigError, match="no kubeconfig found"):
        find_token(TokenSources(), environ=nothing)
    with pytest.raises(KubeconfigError, match="cannot read the token file"):
        find_token(TokenSources(token_file=tmp_path / "missing"), environ=nothing, optional=True)


@pytest.mark.parametrize(
    ("argv", "joined"),
    [
        pytest.param(["--for", "-1h"], ["--for=-1h"], id="negative-duration-is-attached"),
        pytest.param(["--for", "1h"], ["--for", "1h"], id="a-plain-value-is-left-alone"),
        pytest.param(["--for", "--reason"], ["--for", "--reason"], id="an-option-stays-one"),
        pytest.param(["--reason", "-1h"], ["--reason", "-1h"], id="only-duration-options"),
    ],
)
def test_a_negative_duration_is_kept_as_the_options_value(
    argv: list[str], joined: list[str]
) -> None:
    assert join_option_values(argv) == joined


def test_the_console_script_refuses_a_negative_for_before_looking_for_a_token(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = console_main(["exempt", "rc", "-n", "team-a", "--for", "-1h", "--reason", "x"])
    printed = capsys.readouterr()
    assert code == 2
    assert printed.err == (
        "error: --for: '-1h' is negative; a duration is a length such as 90s, 15m, 1h30m or 2d\n"
    )


def test_an_unreachable_service_is_exit_code_three(capsys: pytest.CaptureFixture[str]) -> None:
    code = console_main(["status", "--server", "http://127.0.0.1:9", "--token", "t"])
    printed = capsys.readouterr()
    assert code == 3
    assert printed.err.startswith("error: cannot reach http://127.0.0.1:9")
    assert len(printed.err.splitlines()) == 1
