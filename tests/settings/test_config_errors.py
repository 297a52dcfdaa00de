"""A settings file's errors as a person meets them: every one in one pass, sorted by path,
each on one line in one path style (`rules[1].match.namespaces[0]`, 0-based), each saying what
to write; an unknown key named with the nearest known one, or the keys allowed there."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from autoscaler.core.errors import ConfigError
from autoscaler.demo.scenarios import SCENARIOS
from autoscaler.domain.durations import LONGEST, TooLong, parse_duration
from autoscaler.settings import tree
from autoscaler.settings.policy import PolicySettings
from autoscaler.settings.tree import load_settings
from tests.support.check_config import check_config

REPO = Path(__file__).resolve().parents[2]
CHART_SCHEMA = REPO / "charts/idle-gpu-autoscaler/values.schema.json"
# A path as every line writes it: keys by dots, entries by their place in brackets.
PATH = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_-]*|\[\d+\])*")


def problems_of(tmp_path: Path, text: str, **environ: str) -> list[str]:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_settings(path, environ=environ)
    return refused.value.problems


def two_rules(*lines: str) -> str:
    """A `rules:` list of two sound rules, then `lines` as a third rule's (rules[2])."""
    head = "rules:\n  - name: a\n    match: {namespaces: [a]}\n"
    head += "  - name: b\n    match: {namespaces: [b]}\n"
    return head + "  - name: c\n" + "".join(f"    {line}\n" for line in lines)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("polcy: {}\n", 'polcy: unknown key; did you mean "policy"?', id="section"),
        pytest.param(
            "policy: {idleWindw: 1h}\n",
            'policy.idleWindw: unknown key; did you mean "idleWindow"?',
            id="policy",
        ),
        pytest.param(
            "policy: {snooze: {perday: 2}}\n",
            'policy.snooze.perday: unknown key; did you mean "perDay"?',
            id="policy-snooze-case-only",
        ),
        pytest.param(
            two_rules("threshhold: 3"),
            'rules[2].threshhold: unknown key; did you mean "thresholdPercent"?',
            id="a-rule",
        ),
        pytest.param(
            two_rules("match: {namespace: [x]}"),
            'rules[2].match.namespace: unknown key; did you mean "namespaces"?',
            id="a-rules-match",
        ),
        pytest.param(
            two_rules("exemptions: {max_duraton: 1d}"),
            'rules[2].exemptions.max_duraton: unknown key; did you mean "maxDuration"?',
            id="a-rules-exemptions-snake-case",
        ),
        pytest.param(
            "cluster: {ownerKinds: {RayCluster: {enabled: true, podSelectr: 'a={name}'}}}\n",
            'cluster.ownerKinds.RayCluster.podSelectr: unknown key; did you mean "podSelector"?',
            id="an-owner-kind",
        ),
        pytest.param(
            "notifications: {targets: {ops: {type: webhook, urlFle: /u}}}\n",
            'notifications.targets.ops.urlFle: unknown key; did you mean "urlFile"?',
            id="a-notification-target",
        ),
        pytest.param(
            "actuators: {kueue: {enable: true}}\n",
            'actuators.kueue.enable: unknown key; did you mean "enabled"?',
            id="an-actuator",
        ),
    ],
)
def test_an_unknown_key_is_named_with_the_nearest_known_one_at_every_depth(
    tmp_path: Path, text: str, expected: str
) -> None:
    assert expected in problems_of(tmp_path, text)


def test_an_unknown_key_with_nothing_close_lists_the_keys_allowed_there(tmp_path: Path) -> None:
    [line] = problems_of(tmp_path, "policy: {zzzz: 1}\n")
    head, listed = line.split("; valid keys at policy: ")
    assert head == "policy.zzzz: unknown key"
    written = [info.alias for info in PolicySettings.model_fields.values()]
    assert listed.split(", ") == written


def test_a_removed_key_names_its_replacement_rather_than_a_near_key(tmp_path: Path) -> None:
    [line] = problems_of(tmp_path, "api: {maxExemption: 1d}\n")
    assert line.startswith("api.maxExemption: removed at 1.0; write exemptions.maxDuration")


def test_a_type_error_and_a_duplicate_rule_name_come_in_one_run(tmp_path: Path) -> None:
    """Through the real command: both problems, sorted by path, then their count; exit 2."""
    path = tmp_path / "config.yaml"
    path.write_text(
        "rules:\n"
        "  - name: a\n    match: {namespaces: [x]}\n    thresholdPercent: high\n"
        "  - name: a\n    match: {namespaces: [y]}\n",
        encoding="utf-8",
    )
    result = check_config(path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "error: rules[0].thresholdPercent: must be a number ≥ 0 and < 100 (found 'high')",
        "error: rules[1].name: a is used by an earlier rule (rules[0].name): give each rule its "
        "own name",
        f"error: 2 problems in {path}: fix each, then run idle-gpu-autoscaler check-config "
        f"--config {path}",
    ]


def test_a_check_across_keys_is_skipped_only_when_what_it_reads_did_not_parse(
    tmp_path: Path,
) -> None:
    """policy.slot does not parse: the rule's window is not judged against a slot the file
    never said, while the rule names (which do not read it) are still checked."""
    problems = problems_of(
        tmp_path,
        "policy: {slot: soon}\n"
        "rules:\n"
        "  - name: a\n    match: {namespaces: [x]}\n    idleWindow: 1s\n"
        "  - name: a\n    match: {namespaces: [y]}\n",
    )
    assert [line.split(":")[0] for line in problems] == ["policy.slot", "rules[1].name"]


def test_a_check_that_reads_any_entry_is_skipped_when_one_entrys_value_did_not_parse(
    tmp_path: Path,
) -> None:
    """rules[0].notify does not parse: the targets check (which reads every rule's notify) is
    skipped; the duplicate name, which reads no notify, is still reported."""
    rule = "  - name: a\n    match: {namespaces: [x]}\n"
    problems = problems_of(tmp_path, f"rules:\n{rule}    notify: ops\n{rule}    notify: [ops]\n")
    assert [line.split(":")[0] for line in problems] == ["rules[0].notify", "rules[1].name"]


def test_a_rule_without_a_name_keeps_its_place_for_the_checks_that_read_no_name(
    tmp_path: Path,
) -> None:
    """`nme:` for `name:`: the name is missing, yet the rule's other keys are still checked,
    and at their own place in the list."""
    problems = problems_of(
        tmp_path,
        "rules:\n"
        "  - name: a\n    match: {namespaces: [x]}\n"
        "  - nme: b\n    match: {namespaces: [y]}\n    notify: [nobody]\n"
        "  - name: Bad\n    match: {namespaces: [z]}\n    idleWindow: 1s\n",
    )
    assert [line.split(":")[0] for line in problems] == [
        "rules[1].name",
        "rules[1].nme",
        "rules[1].notify",
        "rules[2].idleWindow",
        "rules[2].name",
    ]


def test_the_same_file_with_the_slot_mended_reports_the_window_the_check_skipped(
    tmp_path: Path,
) -> None:
    problems = problems_of(
        tmp_path,
        "policy: {slot: 1m}\n"
        "rules:\n  - name: a\n    match: {namespaces: [x]}\n    idleWindow: 1s\n",
    )
    assert problems == ["rules[0].idleWindow: must not be shorter than policy.slot: at least 1m"]


def test_problems_are_sorted_by_path_with_entries_in_numeric_order(tmp_path: Path) -> None:
    rules = [{"name": f"r{n}", "match": {"namespaces": [f"n{n}"]}} for n in range(12)]
    rules[10]["reclaim"] = "sometimes"
    rules[2]["reclaim"] = "sometimes"
    problems = problems_of(tmp_path, yaml.safe_dump({"rules": rules, "loop": {"interval": "x"}}))
    assert [line.split(":")[0] for line in problems] == [
        "loop.interval",
        "rules[2].reclaim",
        "rules[10].reclaim",
    ]


def with_window_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An override of a duration: none of the shipped ones can fail to parse (URLs, paths,
    a namespace), so the test adds one the way the table would."""
    monkeypatch.setitem(
        tree.ENVIRONMENT_OVERRIDES, "IGA_TEST_IDLE_WINDOW", ("policy", "idleWindow")
    )
    return {"IGA_TEST_IDLE_WINDOW": "soon"}


KINDS = [
    pytest.param(
        "rules:\n  - name: a\n    match: {namespaces: [x]}\n"
        "  - name: b\n    match: {namespaces: [x, 7]}\n",
        "rules[1].match.namespaces[1]",
        "must be text",
        id="a-value-that-does-not-parse",
    ),
    pytest.param(
        "rules:\n  - name: a\n    match: {namespaces: [x]}\n    reclaim: sometimes\n",
        "rules[0].reclaim",
        "must be 'always', 'when-contended' or 'via-kueue'",
        id="a-word-not-among-the-choices",
    ),
    pytest.param(
        "policy: {idleWindow: soon}\n",
        "policy.idleWindow",
        "is not a duration such as 90s, 15m, 1h30m or 2d, at most 36500d",
        id="a-duration",
    ),
    pytest.param(
        "policy: {warnBefore: 36501d}\n",
        "policy.warnBefore",
        "at most 36500d",
        id="a-duration-past-a-century",
    ),
    pytest.param(
        "rules:\n  - name: a\n    match: {namespaces: [x]}\n    notRunningAfter: 0s\n",
        "rules[0].notRunningAfter",
        "must be longer than 0s",
        id="a-duration-at-its-bound",
    ),
    pytest.param(
        "rules:\n  - name: a\n    match: {namespaces: [x]}\n    nmae: b\n",
        "rules[0].nmae",
        'unknown key; did you mean "name"?',
        id="an-unknown-key",
    ),
    pytest.param(
        "keda: {profiles: {}}\n", "keda.profiles", "removed at 1.0; write a rule", id="removed"
    ),
    pytest.param(
        "rules:\n  - {name: a, match: {namespaces: [x]}}\n  - {name: a}\n",
        "rules[1].name",
        "give each rule its own name",
        id="across-keys",
    ),
    pytest.param(
        "policy: {idleWindow: 2h, idleSinceLookback: 1h}\n",
        "policy.idleSinceLookback",
        "must be at least idleWindow: raise it or shorten idleWindow",
        id="a-sections-own-check",
    ),
    pytest.param(
        "cluster: {ownerKinds: {Notebook: {podSelector: 'a={name}'}}}\n",
        "cluster.ownerKinds.Notebook.enabled",
        "required: add it (true or false)",
        id="a-required-key",
    ),
]


@pytest.mark.parametrize(("text", "path", "next_step"), KINDS)
def test_every_kind_of_error_is_one_line_in_one_path_style_saying_what_to_write(
    tmp_path: Path, text: str, path: str, next_step: str
) -> None:
    [line] = problems_of(tmp_path, text)
    assert line.startswith(f"{path}: ")
    assert next_step in line
    assert PATH.fullmatch(line.split(": ")[0])
    assert "\n" not in line


def test_a_value_from_the_environment_names_its_variable_in_the_same_path_style(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    environ = with_window_from_the_environment(monkeypatch)
    [line] = problems_of(tmp_path, "policy: {idleWindow: 2h}\n", **environ)
    assert line == (
        "policy.idleWindow (from IGA_TEST_IDLE_WINDOW): 'soon' is not a duration such as 90s, "
        "15m, 1h30m or 2d, at most 36500d; fix or unset IGA_TEST_IDLE_WINDOW"
    )


@pytest.mark.parametrize(
    ("section", "variable", "value", "read"),
    [
        ("prometheus", "IGA_PROMETHEUS_URL", "http://p:9090", lambda s: s.prometheus.url),
        ("cluster", "IGA_KUBECONFIG", "/etc/kube/config", lambda s: str(s.cluster.kubeconfig)),
    ],
)
def test_a_section_written_empty_takes_its_value_from_the_environment(
    tmp_path: Path, section: str, variable: str, value: str, read: Any
) -> None:
    """`prometheus:` followed only by a comment is YAML null: an empty section, as before."""
    path = tmp_path / "config.yaml"
    path.write_text(f"{section}:\n  # from {variable}\n", encoding="utf-8")
    assert read(load_settings(path, environ={variable: value})) == value


@pytest.mark.parametrize("written", ["prometheus: http://p:9090\n", "prometheus: [a]\n"])
def test_a_section_written_as_a_scalar_or_list_keeps_its_own_error_under_an_override(
    tmp_path: Path, written: str
) -> None:
    [line] = problems_of(tmp_path, written, IGA_PROMETHEUS_URL="http://p:9090")
    assert line.startswith("prometheus: ")
    assert "IGA_PROMETHEUS_URL" not in line


def test_a_static_token_file_entry_is_named_in_the_same_path_style(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text("tokens:\n  - {username: ops, token: short}\n", encoding="utf-8")
    config = tmp_path / "config.yaml"
    config.write_text(
        json.dumps({"api": {"auth": {"mode": "static", "staticTokensFile": str(tokens)}}}),
        encoding="utf-8",
    )
    result = check_config(config)
    assert result.returncode == 2
    assert f"api.auth.staticTokensFile: {tokens}: tokens[0].token: " in result.stderr
    assert result.stderr.splitlines()[-1].startswith("error: 1 problem in ")


def chart_accepts(definition: str, value: Any) -> bool:
    schema = json.loads(CHART_SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(
        {"$ref": f"#/definitions/{definition}", "definitions": schema["definitions"]}
    ).is_valid(value)


def settings_take(value: Any) -> bool:
    try:
        parse_duration(value)
    except TooLong:
        return False
    return True


@pytest.mark.parametrize(
    "value",
    [
        "36500d",
        "36501d",
        "36500.5d",
        "876000h",
        "876001h",
        "52560000m",
        "52560001m",
        "3153600000",
        "3153600001",
        "3153600000s",
        "3153600001000ms",
        int(LONGEST.total_seconds()),
        int(LONGEST.total_seconds()) + 1,
        " 0036500 d ",
    ],
)
@pytest.mark.parametrize("definition", ["duration", "positiveDuration"])
def test_the_charts_schema_bounds_a_duration_at_the_century_the_settings_keep(
    definition: str, value: Any
) -> None:
    assert chart_accepts(definition, value) is settings_take(value)


def test_the_charts_duration_descriptions_state_the_bound() -> None:
    definitions = json.loads(CHART_SCHEMA.read_text(encoding="utf-8"))["definitions"]
    for name in ("duration", "positiveDuration"):
        assert "at most 36500d" in definitions[name]["description"]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_demo_storys_settings_pass_as_a_file(tmp_path: Path, name: str) -> None:
    """The demo builds its settings in code; written out as a file they are still valid."""
    settings = SCENARIOS[name].settings(dry_run=False)
    written = settings.model_dump(mode="json", by_alias=True, exclude_unset=True)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(written), encoding="utf-8")
    assert load_settings(path, environ={}) == settings


def test_the_example_file_passes_check_config() -> None:
    result = check_config(REPO / "config" / "example.yaml")
    assert result.returncode == 0, result.stderr
