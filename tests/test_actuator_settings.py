"""The `actuators:` section (ISSUE 17): Kueue's actuator on by default, the suspend actuators
opt-in, and a file that leaves the service no way to act, or that enables a suspend actuator
whose rows would all be protected, refused naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler.core.errors import ConfigError
from autoscaler.domain.policy.management import Manager
from autoscaler.settings.tree import load_settings

NO_RAYCLUSTER_OWNER = """
cluster:
  ownerKinds:
    RayCluster: {enabled: false, podSelector: "ray.io/cluster={name}"}
    RayJob: {enabled: true, podSelector: "ray.io/originated-from-cr-name={name}"}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_settings(write(tmp_path, text), environ={})
    return caught.value.problems


def test_by_default_only_kueues_actuator_is_enabled() -> None:
    settings = load_settings(None, environ={})
    assert settings.actuators.enabled() == frozenset({Manager.KUEUE})


@pytest.mark.parametrize(
    ("text", "enabled"),
    [
        pytest.param(
            "actuators: {kai: {enabled: true}}\n",
            {Manager.KUEUE, Manager.KAI},
            id="kai-beside-kueue",
        ),
        pytest.param(
            "actuators: {kueue: {enabled: false}, kai: {enabled: true}}\n",
            {Manager.KAI},
            id="kai-only-cluster",
        ),
        pytest.param(
            "actuators: {kueue: {enabled: false}, kuberay: {enabled: true}}\n",
            {Manager.KUBERAY},
            id="plain-kuberay-only-cluster",
        ),
    ],
)
def test_an_enabled_set_that_can_act_is_accepted(
    tmp_path: Path, text: str, enabled: set[Manager]
) -> None:
    settings = load_settings(write(tmp_path, text), environ={})
    assert settings.actuators.enabled() == frozenset(enabled)


def test_every_actuator_disabled_is_refused_naming_the_section(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, "actuators: {kueue: {enabled: false}}\n")
    assert problems == [
        "actuators: every actuator is disabled, so the service could never free a GPU: "
        "enable at least one of kueue, kai, kuberay"
    ]


@pytest.mark.parametrize(
    ("switches", "named"),
    [
        pytest.param("{kai: {enabled: true}}", ["kai"], id="kai-needs-raycluster-owner-kind"),
        pytest.param(
            "{kuberay: {enabled: true}}", ["kuberay"], id="kuberay-needs-raycluster-owner-kind"
        ),
        pytest.param(
            "{kai: {enabled: true}, kuberay: {enabled: true}}",
            ["kai", "kuberay"],
            id="each-suspend-actuator-named-once",
        ),
    ],
)
def test_a_suspend_actuator_whose_rows_would_all_be_protected_is_refused(
    tmp_path: Path, switches: str, named: list[str]
) -> None:
    problems = problems_of(tmp_path, f"actuators: {switches}\n" + NO_RAYCLUSTER_OWNER)
    assert [problem.split(":")[0] for problem in problems] == [
        f"actuators.{name}.enabled" for name in named
    ]
    assert all("cluster.ownerKinds.RayCluster.enabled is false" in p for p in problems)
    assert all("would be protected" in p for p in problems)


def test_kueue_alone_does_not_need_the_raycluster_owner_kind(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, NO_RAYCLUSTER_OWNER), environ={})
    assert settings.actuators.enabled() == frozenset({Manager.KUEUE})
