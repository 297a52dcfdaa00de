"""Every error a first hour meets says what to do next, in one line, with docs/CLI.md's exit
code: each case is the real console command (`autoscaler.cli.main`) against what a person
would point it at: no cluster, no Prometheus, no service, the gRPC port, the API's own path,
an in-process service with tokens (the API tests' rig)."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from autoscaler.cli import _parser
from autoscaler.cli import main as console_main
from autoscaler.client.next_steps import DURATION_OPTIONS, durations_written_apart
from tests.api.rig import TOKENS, ApiRig
from tests.keda.rig import running_scaler
from tests.support.prom import free_port

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = str(REPO / "config" / "example.yaml")
EXIT_REFUSED, EXIT_USAGE, EXIT_UNREACHABLE = 1, 2, 3  # docs/CLI.md


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A person's machine with no kubeconfig and no cluster around it."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))
    for name in ("KUBERNETES_SERVICE_HOST", "IGA_URL", "IGA_TOKEN", "IGA_PROMETHEUS_URL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def said(capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line on stderr (and nothing on stdout)."""
    printed = capsys.readouterr()
    assert printed.out == ""
    lines = printed.err.splitlines()
    assert len(lines) == 1, printed.err
    assert lines[0].startswith("error: ")
    return lines[0]


def test_serve_without_kubernetes_credentials_names_where_they_come_from(
    nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert console_main(["serve", "--config", EXAMPLE]) == EXIT_UNREACHABLE
    line = said(capsys)
    assert "no Kubernetes credentials found" in line
    for step in ("run it in the cluster", "KUBECONFIG", "--kubeconfig", "idle-gpu-autoscaler demo"):
        assert step in line


def test_serve_with_an_unusable_kubeconfig_names_the_context_to_check(
    nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (nowhere / "empty").write_text("")
    code = console_main(["serve", "--config", EXAMPLE, "--kubeconfig", str(nowhere / "empty")])
    assert code == EXIT_UNREACHABLE
    line = said(capsys)
    assert "empty" in line
    assert "--context" in line and "kubectl config get-contexts" in line


def test_an_unreachable_service_names_server_iga_url_and_the_port_forward(
    nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = f"http://127.0.0.1:{free_port()}"
    assert console_main(["status", "--server", server, "--token", "t"]) == EXIT_UNREACHABLE
    line = said(capsys)
    assert line.startswith(f"error: cannot reach {server}: ")
    assert "Connection refused" in line
    for step in ("--server", "$IGA_URL", "kubectl port-forward"):
        assert step in line


def test_a_missing_token_names_the_token_file_iga_token_and_the_kubeconfig_context(
    service: ApiRig, nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert console_main(["status", "--server", service.url]) == EXIT_REFUSED
    line = said(capsys)
    assert line.startswith("error: 401 Unauthorized: a bearer token is required; ")
    for step in ("--token-file", "$IGA_TOKEN", "--context"):
        assert step in line


@pytest.mark.parametrize(
    ("argv", "refused"),
    [
        pytest.param(
            ["pause", "--all", "--reason", "x"],
            "alice may not update configmaps",
            id="an-admin-change",
        ),
        pytest.param(
            ["exempt", "alice-rc", "-n", "team-b", "--for", "1h", "--reason", "x"],
            "alice may not change workloads in team-b",
            id="another-teams-workload",
        ),
    ],
)
def test_a_forbidden_change_names_who_grants_the_right_and_how_to_act_as_someone_else(
    service: ApiRig,
    nowhere: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    refused: str,
) -> None:
    assert console_main([*argv, "--server", service.url, "--token", TOKENS["alice"]]) == 1
    line = said(capsys)
    assert line.startswith(f"error: 403 Forbidden: {refused}")
    for step in ("ask a cluster admin", "--token-file", "$IGA_TOKEN", "--context"):
        assert step in line


@pytest.mark.parametrize("module", ["autoscaler", "autoscaler.client"])
def test_status_into_a_reader_that_left_ends_quietly_like_other_tools(
    service: ApiRig, module: str
) -> None:
    """`status | head -1`: the reader closes the pipe; no BrokenPipeError traceback, no
    "Exception ignored" at exit, and the shell's code for a closed pipe (128 + SIGPIPE)."""
    argv = ["status", "--server", service.url, "--token", TOKENS["admin"]]
    child = subprocess.Popen(
        [sys.executable, "-m", module, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert child.stdout is not None
    child.stdout.close()  # before the child can import anything, let alone write
    _, err = child.communicate(timeout=60)
    assert err.decode() == ""
    assert child.returncode == 128 + signal.SIGPIPE


def test_the_grpc_port_as_server_is_told_as_the_keda_port(
    nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_scaler() as scaler:
        code = console_main(["status", "--server", f"http://{scaler.target}", "--token", "t"])
    assert code == EXIT_UNREACHABLE
    line = said(capsys)
    assert "gRPC (KEDA) port" in line
    assert "REST API listens on" in line and "8080" in line and "--server" in line


def test_a_server_ending_in_the_api_path_names_the_base_address(
    service: ApiRig, nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["status", "--server", f"{service.url}/api/v1", "--token", TOKENS["admin"]]
    assert console_main(argv) == EXIT_REFUSED
    line = said(capsys)
    assert line.startswith("error: 404 Not Found: ")
    assert "(--server, $IGA_URL)" in line
    assert line.endswith(f"base address, without /api/v1: {service.url}")


def test_backtest_without_prometheus_names_the_flag_the_variable_and_the_port_forward(
    nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    argv = ["backtest", "--config", EXAMPLE, "--prometheus-url", url, "--since", "1h"]
    assert console_main(argv) == EXIT_REFUSED  # backtest's "Prometheus failed"
    line = said(capsys)
    assert line.startswith(f"error: cannot connect to Prometheus at {url} ([Errno 111] ")
    for step in ("--prometheus-url", "IGA_PROMETHEUS_URL", "kubectl port-forward"):
        assert step in line
    assert len(line) < 300  # not urllib3's whole chain


def test_backtest_help_documents_the_prometheus_url_and_its_variable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        console_main(["backtest", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--prometheus-url URL" in text and "$IGA_PROMETHEUS_URL" in text


def test_status_of_a_namespace_without_workloads_is_not_found_like_an_unknown_workload(
    service: ApiRig, nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = ["--server", service.url, "--token", TOKENS["admin"]]
    assert console_main(["status", "-n", "nosuchns", *admin]) == EXIT_REFUSED
    line = said(capsys)
    assert "no workloads in namespace nosuchns" in line and "cannot read it" in line
    assert "`idle-gpu-autoscaler status`" in line and "kubectl get workloads" in line
    # The same code as a workload the service does not know, which names the listing too.
    assert console_main(["status", "nobody", "-n", "team-a", *admin]) == EXIT_REFUSED
    assert said(capsys).endswith("`idle-gpu-autoscaler status -n team-a`")
    # A filter may rightly match nothing in a namespace that has workloads.
    assert console_main(["status", "-n", "team-a", "--state", "busy", *admin]) == 0
    assert capsys.readouterr().out.strip() == "no workloads"


@pytest.mark.parametrize(
    ("argv", "written"),
    [
        pytest.param(["exempt", "rc", "-n", "team-a", "--for", "5", "hours"], "5h", id="for"),
        pytest.param(["snooze", "team-a/rc", "90", "minutes"], "90m", id="snooze"),
        pytest.param(["report", "--since", "2", "weeks"], "14d", id="weeks-in-days"),
    ],
)
def test_a_duration_written_apart_is_one_line_naming_how_to_write_it(
    argv: list[str], written: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        console_main([*argv, "--reason", "r"])
    assert stopped.value.code == EXIT_USAGE
    line = said(capsys)
    assert f": {written} (" in line and "usage:" not in line


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["status", "-n", "5", "d"], id="numeric-namespace-then-name"),
        pytest.param(["explain", "-n", "7", "h"], id="explain"),
        pytest.param(["snooze", "d", "-n", "5", "4h"], id="snooze-namespace"),
    ],
)
def test_a_number_followed_by_a_unit_like_word_elsewhere_is_not_a_duration(
    argv: list[str],
) -> None:
    assert durations_written_apart(argv) is None


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["backtest", "--step", "5", "minutes"], id="step"),
        pytest.param(["backtest", "--regret-horizon", "2", "h"], id="regret-horizon"),
        pytest.param(["backtest", "--alternative", "2", "hours"], id="alternative"),
        pytest.param(["backtest", "--since", "7", "days"], id="backtest-since"),
    ],
)
def test_every_duration_option_written_apart_is_refused(argv: list[str]) -> None:
    said_instead = durations_written_apart(argv)
    assert said_instead is not None and "durations are written as one word" in said_instead


def test_the_duration_options_are_every_option_the_parser_reads_a_duration_with() -> None:
    """DURATION_OPTIONS is checked against the parser itself: an option added later that
    takes a duration (its metavar or its type says so) must be listed there too."""
    found = set()
    for command in _subcommands(_parser()):
        for action in command._actions:
            takes = action.metavar in {"DURATION", "WINDOW[@PERCENT]"} or (
                getattr(action.type, "__name__", "") == "_duration"
            )
            found.update(o for o in action.option_strings if takes)
    assert found == set(DURATION_OPTIONS)


def _subcommands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    [choices] = [a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(choices.values())


def test_a_usage_mistake_is_one_line_naming_the_commands_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stopped:
        console_main(["exempt", "rc", "-n", "team-a", "--for", "1h"])
    assert stopped.value.code == EXIT_USAGE
    line = said(capsys)
    assert "--reason" in line and line.endswith("see `idle-gpu-autoscaler exempt --help`")


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        pytest.param(["--alternative", "abc"], "--alternative: 'abc' is not", id="window"),
        pytest.param(["--alternative", "1h@x"], "e.g. 30m@10", id="threshold"),
        pytest.param(["--chart-windows", "1h,zz"], "--chart-windows: 'zz'", id="chart"),
        pytest.param(["--end", "2020-01-01T00:00:00Z"], "give a --start before --end", id="range"),
    ],
)
def test_a_backtest_option_it_cannot_use_is_named_with_how_to_write_it(
    argv: list[str], names: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert console_main(["backtest", "--demo", *argv]) == EXIT_USAGE
    assert names in said(capsys)


def test_a_target_written_namespace_slash_name_names_its_namespaces_listing(
    service: ApiRig, nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = ["--server", service.url, "--token", TOKENS["admin"]]
    assert console_main(["unsnooze", "team-a/nobody", *admin]) == EXIT_REFUSED
    assert said(capsys).endswith("`idle-gpu-autoscaler status -n team-a`")


def test_https_against_the_plain_http_service_and_a_server_without_scheme_name_the_url_to_use(
    service: ApiRig, nowhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = service.url.removeprefix("http://")
    assert (
        console_main(["status", "--server", f"https://{address}", "--token", "t"])
        == EXIT_UNREACHABLE
    )
    assert said(capsys).endswith(f"use --server http://{address}")
    assert console_main(["status", "--server", address, "--token", "t"]) == EXIT_UNREACHABLE
    assert "needs http:// or https://" in said(capsys)
