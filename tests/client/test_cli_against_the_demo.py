"""Every new subcommand against the running demo, with the token it printed: through
`--token-file`, `IGA_TOKEN` and an exec-plugin kubeconfig, as a person would set it up.

Each test leaves the demo as its end state allows others to find it (what it pauses it
resumes), and asserts only on what it did itself, so the order does not matter.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import yaml

from autoscaler.client.commands import add_commands, join_option_values, run
from tests.support.demo_process import ServingDemo, serving_demo

REPO = Path(__file__).resolve().parents[2]
SERVE_S = 90  # an upper bound: the module stops the demo when its tests are done
FIRST, SECOND = "first-raycluster", "second-raycluster"  # the story's two RayClusters


@pytest.fixture(scope="module")
def demo() -> Iterator[ServingDemo]:
    with serving_demo(serve_seconds=SERVE_S) as serving:
        yield serving


def no_kubeconfig(tmp_path: Path) -> dict[str, str]:
    return {"KUBECONFIG": str(tmp_path / "no-kubeconfig")}


def cli(demo: ServingDemo, *argv: str, environ: Mapping[str, str]) -> tuple[int, str, str]:
    """One command in this process, parsed as the console script parses it."""
    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(join_option_values([*argv, "--server", demo.rest]))
    out, err = io.StringIO(), io.StringIO()
    code = run(args, out=out, err=err, environ=environ)
    return code, out.getvalue(), err.getvalue()


def as_admin(demo: ServingDemo, *argv: str, tmp_path: Path) -> tuple[int, str, str]:
    """With the demo's token in `IGA_TOKEN` and no kubeconfig."""
    return cli(demo, *argv, environ={**no_kubeconfig(tmp_path), "IGA_TOKEN": demo.token})


def exec_plugin_kubeconfig(tmp_path: Path, token: str) -> Path:
    """A kubeconfig whose user runs a tiny credential helper, as EKS, GKE and AKS ones do."""
    helper = tmp_path / "credential-helper.py"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": token},
    }
    helper.write_text(f"import json\nprint(json.dumps({credential!r}))\n")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "demo",
        "clusters": [{"name": "demo", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "contexts": [{"name": "demo", "context": {"cluster": "demo", "user": "sso"}}],
        "users": [
            {
                "name": "sso",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": sys.executable,
                        "args": [str(helper)],
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_status_lists_the_demos_two_rayclusters_as_a_table_json_and_yaml(
    demo: ServingDemo, tmp_path: Path
) -> None:
    table = as_admin(demo, "status", "-n", "demo", tmp_path=tmp_path)
    listed = as_admin(demo, "status", "-o", "json", tmp_path=tmp_path)
    shown = as_admin(demo, "status", SECOND, "-n", "demo", "-o", "yaml", tmp_path=tmp_path)
    assert table[0] == listed[0] == shown[0] == 0
    assert FIRST in table[1] and SECOND in table[1]
    # The stopped one's STOP-AT says when it stopped, not the plan its warning carried.
    [first_row] = [row for row in table[1].splitlines() if f"RayCluster/{FIRST}" in row.split()]
    assert "stopped 2026-03-02T11:35:00Z" in first_row
    owners = {item["owner"]["name"] for item in json.loads(listed[1])["items"]}
    assert owners == {FIRST, SECOND}
    assert yaml.safe_load(shown[1])["owner"]["name"] == SECOND


def test_breaker_reset_goes_through_an_exec_plugin_kubeconfig(
    demo: ServingDemo, tmp_path: Path
) -> None:
    environ = {"KUBECONFIG": str(exec_plugin_kubeconfig(tmp_path, demo.token))}
    code, out, err = cli(demo, "breaker", "reset", "--reason", "from my SSO login", environ=environ)
    assert (code, err) == (0, "")
    assert out.startswith("circuit breaker reset: closed")
    code, out, _ = cli(demo, "audit", "-o", "json", environ=environ)
    (record,) = [r for r in json.loads(out)["items"] if r["reason"] == "from my SSO login"]
    assert (record["action"], record["actor"]) == ("reset-breaker", "demo-admin")


def test_breaker_status_shows_the_breaker_with_the_demos_token_and_not_without(
    demo: ServingDemo, tmp_path: Path
) -> None:
    code, out, _ = as_admin(demo, "breaker", "status", "-o", "json", tmp_path=tmp_path)
    assert code == 0
    assert json.loads(out)["open"] is False
    code, out, _ = as_admin(demo, "breaker", "status", tmp_path=tmp_path)
    assert out.startswith("circuit breaker closed")
    code, _out, err = cli(demo, "breaker", "status", environ=no_kubeconfig(tmp_path))
    assert (code, "401" in err) == (1, True)  # reads are authorized by default


def test_exempt_for_a_compound_duration_with_the_token_from_a_file_shows_in_the_audit(
    demo: ServingDemo, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(demo.token + "\n")
    by_file = ("--token-file", str(token_file))
    code, out, err = cli(
        demo,
        *("exempt", FIRST, "-n", "demo", "--for", "1h30m", "--reason", "token from a file"),
        *by_file,
        environ=no_kubeconfig(tmp_path),
    )
    assert (code, err) == (0, "")
    assert "exempt until" in out
    code, out, _ = cli(demo, "audit", "-n", "demo", *by_file, environ=no_kubeconfig(tmp_path))
    assert code == 0
    assert "AT" in out.splitlines()[0] and "ACTOR" in out.splitlines()[0]
    assert "token from a file" in out and "demo-admin" in out


def test_a_wrong_token_file_is_refused_by_the_api_saying_why(
    demo: ServingDemo, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text("not-the-demos-token")
    argv = ("uncontest", FIRST, "-n", "demo", "--token-file", str(tmp_path / "token"))
    code, out, err = cli(demo, *argv, environ=no_kubeconfig(tmp_path))
    assert (code, out) == (1, "")
    assert err.startswith("error: 401 Unauthorized: ")
    assert len(err.splitlines()) == 1


def test_decisions_show_the_loops_deactivation_with_its_numbers(
    demo: ServingDemo, tmp_path: Path
) -> None:
    code, out, _ = as_admin(demo, "decisions", "-n", "demo", "--limit", "200", tmp_path=tmp_path)
    header, *rows = out.splitlines()
    assert code == 0
    assert header.split() == [
        "AT",
        "ACTION",
        "TARGET",
        "GPUS",
        "PEAK",
        "COVERAGE",
        "THRESHOLD",
        "OUTCOME",
        "EVIDENCE",
    ]
    loop_rows = [row for row in rows if f"raycluster-{FIRST}" in row and " deactivate " in row]
    assert loop_rows, out
    assert loop_rows[-1].split()[3:7] == ["2", "0%", "100%", "5%"]


def test_the_stopped_cluster_explains_itself_and_its_stop_is_done_in_the_audit(
    demo: ServingDemo, tmp_path: Path
) -> None:
    """Read from the stop's annotations, so any replica or a restarted service says the same;
    the audit record written before the patch settled to done."""
    _, status, _ = as_admin(demo, "status", FIRST, "-n", "demo", tmp_path=tmp_path)
    _, explained, _ = as_admin(demo, "explain", FIRST, "-n", "demo", tmp_path=tmp_path)
    code, audit, _ = as_admin(demo, "audit", "-n", "demo", "-o", "json", tmp_path=tmp_path)

    for shown in (status, explained):
        said = dict(
            (line[:18].rstrip().rstrip(":"), line[18:])
            for line in shown.splitlines()
            if line[:1] != " "
        )
        assert said["Reason"] == "stopped at 11:35 by rule default (spec.active is false)"
        assert said["Stopped at"] == "2026-03-02T11:35:00Z"
        assert said["Stopped by"] == "rule default"
        assert said["Evidence at stop"] == "idle 1h15m, peak 0% (threshold 5%), coverage 100%"
        assert said["Bring back with"] == (
            f'idle-gpu-autoscaler reactivate -n demo {FIRST} --reason "back to work"'
        )
    assert code == 0
    records = json.loads(audit)["items"]
    loop = [r for r in records if r["actor"] == "idle-gpu-autoscaler" and FIRST in r["target"]]
    (stop,) = [r for r in loop if r["action"] == "deactivate"]
    assert (stop["outcome"], stop["at"]) == ("done", "2026-03-02T11:35:00Z")


def test_the_storys_snooze_from_the_cli_is_in_the_audit_with_the_demos_user(
    demo: ServingDemo, tmp_path: Path
) -> None:
    code, out, _ = as_admin(demo, "audit", "-n", "demo", "-o", "json", tmp_path=tmp_path)
    assert code == 0
    (record,) = [r for r in json.loads(out)["items"] if r["action"] == "snooze"]
    assert (record["actor"], record["at"]) == ("demo-admin", "2026-03-02T11:05:00Z")
    assert record["reason"] == "until 2026-03-02T11:35:00Z: checking the results after lunch"


def test_deactivate_now_then_again_is_refused_with_the_apis_reason(
    demo: ServingDemo, tmp_path: Path
) -> None:
    argv = ("deactivate", SECOND, "-n", "demo", "--reason", "maintenance window")
    first = as_admin(demo, *argv, tmp_path=tmp_path)
    again = as_admin(demo, *argv, tmp_path=tmp_path)
    assert (
        first[0] == 0 and first[1].startswith("deactivate demo/") and first[1].endswith(": done\n")
    )
    assert again[0] == 1
    assert again[2].startswith("error: 409 Conflict: ") and "is already deactivated" in again[2]
    assert again[2].count("already deactivated") == 1


def test_uncontest_of_an_unmarked_workload_prints_the_apis_409_once(
    demo: ServingDemo, tmp_path: Path
) -> None:
    code, out, err = as_admin(demo, "uncontest", FIRST, "-n", "demo", tmp_path=tmp_path)
    assert (code, out) == (1, "")
    assert err.startswith("error: 409 Conflict: ") and err.count("is not marked contested") == 1


def test_pause_shows_in_pauses_and_resume_says_what_it_resumed(
    demo: ServingDemo, tmp_path: Path
) -> None:
    paused = as_admin(demo, "pause", "-n", "demo", "--reason", "looking into it", tmp_path=tmp_path)
    listed = as_admin(demo, "pauses", "-o", "yaml", tmp_path=tmp_path)
    resumed = as_admin(demo, "resume", "-n", "demo", tmp_path=tmp_path)
    assert (paused[0], listed[0], resumed[0]) == (0, 0, 0)
    scopes = {p["scope"]: p["reason"] for p in yaml.safe_load(listed[1])["paused"]}
    assert scopes["demo"] == "looking into it"
    assert resumed[1].startswith("resumed namespace demo")
    assert "nothing is paused" not in resumed[1]


def test_the_console_script_takes_iga_token_and_refuses_a_negative_for_plainly(
    demo: ServingDemo, tmp_path: Path
) -> None:
    environ = {
        **os.environ,
        **no_kubeconfig(tmp_path),
        "IGA_URL": demo.rest,
        "IGA_TOKEN": demo.token,
        "PYTHONPATH": str(REPO),
    }

    def console(*argv: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "autoscaler", *argv]
        return subprocess.run(
            command, capture_output=True, text=True, env=environ, timeout=60, check=False
        )

    refused = console("exempt", FIRST, "-n", "demo", "--for", "-1h", "--reason", "x")
    done = console(
        "exempt", FIRST, "-n", "demo", "--for", "2h", "--reason", "by IGA_TOKEN", "-o", "json"
    )
    assert refused.returncode == 2
    assert refused.stderr == (
        "error: --for: '-1h' is negative; a duration is a length such as 90s, 15m, 1h30m or 2d\n"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["exemption"]["by"] == "demo-admin"
