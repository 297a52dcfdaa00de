"""`check-config --cluster` (docs/CLI.md, docs/RECLAIM.md): run as a person runs it, against
the test API server. Where a rule says `reclaim: via-kueue`, one line says whether Kueue's
Configuration turns the PriorityBoost gate on (a comment) or not (a warning: the rule does
nothing; the file is still valid, exit 0); an unreachable cluster is one `error:` line naming
what to do next, exit 3, never a traceback. Nothing is written; one discovery request and
one list of the ConfigMap are all it asks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from autoscaler.domain.kueue_config import V1BETA2, gate_served, interpret
from tests.support.check_config import check_config
from tests.support.kube_server import KubeServer
from tests.support.serve_process import write_config, write_kubeconfig

SOURCE = "kueue-system/kueue-manager-config"
VIA_KUEUE: dict[str, Any] = {
    "rules": [
        {"name": "idle-notebooks", "match": {"namespaces": ["team-a"]}, "reclaim": "via-kueue"}
    ]
}


def configuration(gates: str) -> str:
    """As Kueue's manifests ship it (config/components/manager/controller_manager_config.yaml)."""
    return f"apiVersion: {V1BETA2}\nkind: Configuration\n{gates}"


def config_map(text: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": "kueue-system", "name": "kueue-manager-config"},
        "data": {"controller_manager_config.yaml": text},
    }


@pytest.fixture
def server() -> Iterator[KubeServer]:
    with KubeServer() as running:
        yield running


def run(
    tmp_path: Path, server: KubeServer, settings: dict[str, Any], *more: str
) -> tuple[int, str, str]:
    config = write_config(tmp_path / "config.yaml", settings)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server)
    done = check_config(config, "--kubeconfig", str(kubeconfig), *more)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize(
    ("gates", "said"),
    [
        pytest.param("featureGates:\n  PriorityBoost: false\n", "off", id="named-off"),
        pytest.param("featureGates:\n  TopologyAwareScheduling: true\n", "unknown", id="unnamed"),
        pytest.param(None, "unknown", id="no-configmap"),
    ],
)
def test_a_gate_not_on_is_one_warning_line_and_the_file_stays_valid(
    tmp_path: Path, server: KubeServer, gates: str | None, said: str
) -> None:
    if gates is not None:
        server.store.put(config_map(configuration(gates)))
    code, out, err = run(tmp_path, server, VIA_KUEUE)

    assert code == 0, err
    [line] = err.splitlines()
    expected = (
        gate_served(
            interpret(yaml.safe_load(configuration(gates)), source=SOURCE), "PriorityBoost"
        ).line
        if gates is not None
        else f"Kueue feature gate PriorityBoost (alpha since v0.17, default false): unknown, "
        f"cannot read {SOURCE}: not found"
    )
    assert line == f"warning: {expected}; rule idle-notebooks with reclaim: via-kueue does nothing"
    assert f": {said}" in line
    assert out.startswith("# effective configuration"), "the file's check is unchanged"
    assert server.requests.writes() == []


def test_a_gate_on_is_one_comment_beside_the_effective_configuration(
    tmp_path: Path, server: KubeServer
) -> None:
    server.store.put(config_map(configuration("featureGates:\n  PriorityBoost: true\n")))
    code, out, err = run(tmp_path, server, VIA_KUEUE)

    assert (code, err) == (0, "")
    about = "Kueue feature gate PriorityBoost (alpha since v0.17, default false)"
    gate = f"# cluster: {about}: on in {SOURCE}"
    assert gate in out.splitlines()
    asked = [(r.method, r.path) for r in server.requests.all()]
    assert asked == [
        ("GET", "/apis/kueue.x-k8s.io"),
        ("GET", "/api/v1/namespaces/kueue-system/configmaps"),
    ], "one discovery request and one list, nothing else"


def test_without_a_via_kueue_rule_no_gate_is_judged(tmp_path: Path, server: KubeServer) -> None:
    server.store.put(config_map(configuration("featureGates:\n  PriorityBoost: false\n")))
    code, out, err = run(tmp_path, server, {})
    assert (code, err) == (0, "")
    assert "PriorityBoost" not in out.replace("PriorityBoost=false", "")
    assert f"# cluster: Kueue configuration {SOURCE}: waitForPodsReady on" in out


def test_a_cluster_without_kueue_says_the_rule_does_nothing(tmp_path: Path) -> None:
    disabled = {"kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1"}
    with KubeServer(disabled_versions=disabled) as server:
        code, _, err = run(tmp_path, server, VIA_KUEUE)
    assert code == 0
    assert err.splitlines() == [
        "warning: the cluster does not serve kueue.x-k8s.io (Kueue is not installed): "
        "rule idle-notebooks with reclaim: via-kueue does nothing"
    ]


def test_an_unreachable_cluster_is_one_line_naming_what_to_do_and_exit_3(
    tmp_path: Path, server: KubeServer
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server)
    server.close()  # nobody answers at that address any more
    config = write_config(tmp_path / "config.yaml", VIA_KUEUE)
    done = check_config(config, "--kubeconfig", str(kubeconfig))

    assert done.returncode == 3
    [line] = done.stderr.splitlines()
    assert line.startswith("error: cannot reach the cluster: ")
    assert line.endswith("or run check-config without --cluster to check the file alone")
    assert "Traceback" not in done.stderr


def test_a_context_the_kubeconfig_lacks_is_one_line_and_exit_3(
    tmp_path: Path, server: KubeServer
) -> None:
    code, _, err = run(tmp_path, server, VIA_KUEUE, "--context", "elsewhere")
    assert code == 3
    [line] = err.splitlines()
    assert line.startswith("error: cannot reach the cluster: cluster.kubeconfig: ")
    assert "elsewhere" in line
    assert server.requests.all() == []
