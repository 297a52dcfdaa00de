"""The Python client and the command-line client, end to end against a running service."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from autoscaler.client import AutoscalerClient, ClientError
from autoscaler.client.commands import add_commands, join_option_values, run
from autoscaler.domain import annotations as keys
from autoscaler.settings.api import ApiSettings
from tests.api.rig import TOKENS, ApiRig

REPO = Path(__file__).resolve().parents[2]


def write_kubeconfig(path: Path, user: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "work",
                "clusters": [{"name": "c", "cluster": {"server": "https://k8s.example:6443"}}],
                "contexts": [{"name": "work", "context": {"cluster": "c", "user": user}}],
                "users": [{"name": user, "user": {"token": TOKENS[user]}}],
            }
        )
    )
    return path


def cli(
    rig: ApiRig, *argv: str, user: str | None = "alice", tmp_path: Path
) -> tuple[int, str, str]:
    """One CLI command in this process, with the user's kubeconfig as the only one."""
    parser = argparse.ArgumentParser()
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(join_option_values([*argv, "--server", rig.url]))
    environ = (
        {"KUBECONFIG": str(write_kubeconfig(tmp_path / "kubeconfig", user))}
        if user
        else {"KUBECONFIG": str(tmp_path / "missing")}
    )
    out, err = io.StringIO(), io.StringIO()
    code = run(args, out=out, err=err, environ=environ)
    return code, out.getvalue(), err.getvalue()


def test_a_notebook_exempts_my_cluster_for_four_hours_because_i_am_presenting(
    rig: ApiRig,
) -> None:
    rig.add_raycluster("team-a", "my-workspace-cluster")
    rig.cycle()
    with AutoscalerClient(rig.url, token=TOKENS["alice"]) as api:
        done = api.exempt("team-a", "my-workspace-cluster", duration="4h", reason="I am presenting")
        assert done["annotated"] == "RayCluster team-a/my-workspace-cluster"
        assert api.unexempt("team-a", "my-workspace-cluster")["exemption"] is None
        api.exempt("team-a", "my-workspace-cluster", duration=timedelta(hours=1), reason="again")
        until = rig.now + timedelta(hours=2)
        again = api.exempt("team-a", "my-workspace-cluster", until=until, reason="longer")
        assert again["exemption"]["reason"] == "longer"
        assert api.workloads(namespace="team-a")["items"][0]["owner"]["name"] == (
            "my-workspace-cluster"
        )


def test_the_client_raises_the_apis_refusal_with_its_fields(rig: ApiRig) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    with (
        AutoscalerClient(rig.url, token=TOKENS["alice"]) as api,
        pytest.raises(ClientError) as refused,
    ):
        api.exempt("team-a", "alice-rc", duration="30d", reason="long")
    assert refused.value.status == 422
    assert refused.value.fields[0]["field"] == "body.duration"


def test_the_client_reports_an_unreachable_service_as_status_zero() -> None:
    with AutoscalerClient("http://127.0.0.1:9", timeout=1) as api, pytest.raises(ClientError) as e:
        api.workloads()
    assert e.value.status == 0


def test_status_prints_a_table_and_json(rig: ApiRig, tmp_path: Path) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    code, out, _ = cli(rig, "status", "-n", "team-a", tmp_path=tmp_path)  # alice reads team-a
    assert code == 0
    header, line = out.splitlines()
    assert header.split()[:5] == ["NAMESPACE", "OWNER", "WORKLOAD", "GPUS", "STATE"]
    assert line.split()[:2] == ["team-a", "RayCluster/alice-rc"]
    code, out, _ = cli(rig, "status", "alice-rc", "-n", "team-a", "-o", "json", tmp_path=tmp_path)
    assert json.loads(out)["state"] == "idle"


def test_status_without_a_kubeconfig_is_refused_while_reads_are_closed(
    rig: ApiRig, tmp_path: Path
) -> None:
    rig.cycle()
    code, _out, err = cli(rig, "status", user=None, tmp_path=tmp_path)
    assert code == 1
    assert "401" in err


def test_status_works_without_a_kubeconfig_while_reads_are_open(tmp_path: Path) -> None:
    with ApiRig(settings=ApiSettings(host="127.0.0.1", port=0, reads_open=True)) as rig:
        rig.cycle()
        code, out, _ = cli(rig, "status", user=None, tmp_path=tmp_path)
    assert (code, out.strip()) == (0, "no workloads")


def test_exempt_unexempt_pause_resume_and_reactivate_from_the_command_line(
    rig: ApiRig, tmp_path: Path
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.add_raycluster("team-a", "old-rc", active=False)
    rig.cycle()
    steps = [
        ("exempt", "alice-rc", "-n", "team-a", "--for", "4h", "--reason", "demo"),
        ("unexempt", "alice-rc", "-n", "team-a"),
        ("exempt", "alice-rc", "-n", "team-a", "--until", "2099-01-01T00:00:00Z", "--reason", "x"),
        ("pause", "-n", "team-a", "--reason", "debugging"),
        ("resume", "-n", "team-a"),
        ("reactivate", "old-rc", "-n", "team-a", "--reason", "back to work"),
    ]
    outputs = [cli(rig, *step, tmp_path=tmp_path) for step in steps]
    codes = [code for code, _, _ in outputs]
    assert codes == [0, 0, 1, 0, 0, 0]
    assert "exempt until" in outputs[0][1]
    assert "removed" in outputs[1][1]
    assert outputs[2][2].count("body.until: is further away than the maximum") == 1
    assert "team-a" in outputs[3][1] and "debugging" in outputs[3][1]
    assert outputs[4][1].strip() == "resumed namespace team-a; nothing else is paused"
    assert "reactivate team-a/" in outputs[5][1]


@pytest.mark.parametrize(
    ("argv", "user", "expected"),
    [
        pytest.param(
            ("pause", "--all", "--reason", "x"),
            "alice",
            (1, "error: 403 Forbidden: alice may not update"),
            id="refused-by-the-api",
        ),
        pytest.param(
            ("unexempt", "alice-rc"), "alice", (2, "needs -n/--namespace"), id="missing-namespace"
        ),
        pytest.param(
            ("pause", "--reason", "x"),
            "alice",
            (2, "either -n NAMESPACE or --all"),
            id="pause-needs-a-scope",
        ),
        pytest.param(
            ("exempt", "alice-rc", "-n", "team-a", "--until", "tomorrow", "--reason", "x"),
            "alice",
            (2, "RFC 3339"),
            id="unreadable-time",
        ),
        pytest.param(
            ("unexempt", "alice-rc", "-n", "team-a"),
            None,
            (2, "kubeconfig"),
            id="no-kubeconfig-for-a-change",
        ),
        pytest.param(
            ("exempt", "alice-rc", "-n", "team-a", "--for", "-1h", "--reason", "x"),
            "alice",
            (2, "error: --for: '-1h' is negative"),
            id="negative-duration-reaches-the-parser",
        ),
        pytest.param(
            ("exempt", "alice-rc", "-n", "team-a", "--for", "1h", "--reason", "  "),
            "alice",
            (1, "error: 422 Unprocessable Entity: body.reason: must not be blank\n"),
            id="the-apis-422-in-its-own-words",
        ),
    ],
)
def test_command_line_errors_say_what_went_wrong_with_distinct_exit_codes(
    rig: ApiRig,
    tmp_path: Path,
    argv: tuple[str, ...],
    user: str | None,
    expected: tuple[int, str],
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    found, _out, err = cli(rig, *argv, user=user, tmp_path=tmp_path)
    assert found == expected[0]
    assert expected[1] in err


def test_the_command_line_client_runs_as_its_own_process_with_the_kubeconfig_token(
    rig: ApiRig, tmp_path: Path
) -> None:
    rig.add_raycluster("team-a", "alice-rc")
    rig.cycle()
    environ = {
        **os.environ,
        "KUBECONFIG": str(write_kubeconfig(tmp_path / "kubeconfig", "alice")),
        "IGA_URL": rig.url,
        "PYTHONPATH": str(REPO),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "autoscaler.client",
            "exempt",
            "alice-rc",
            "-n",
            "team-a",
            "--for",
            "4h",
            "--reason",
            "I am presenting",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        env=environ,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["exemption"]["by"] == "alice"
    annotations = rig.owner("team-a", "alice-rc")["metadata"]["annotations"]
    assert annotations[keys.EXEMPT_REASON] == "I am presenting"
