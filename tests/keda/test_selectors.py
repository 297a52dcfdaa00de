from __future__ import annotations

import pytest

from autoscaler.keda.selectors import parse_selector

LABELS = {"app": "llm", "tier": "gpu", "example.com/team": "a"}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        pytest.param("app=llm", True, id="equality-matches"),
        pytest.param("app==llm", True, id="double-equals-is-equality"),
        pytest.param("app=web", False, id="other-value-does-not-match"),
        pytest.param("app!=web", True, id="inequality-matches-other-values"),
        pytest.param("canary!=yes", True, id="inequality-matches-a-missing-label"),
        pytest.param("tier in (gpu, cpu)", True, id="set-membership"),
        pytest.param("tier notin (gpu)", False, id="set-exclusion"),
        pytest.param("app", True, id="existence"),
        pytest.param("!canary", True, id="absence"),
        pytest.param("!app", False, id="absence-of-a-present-label"),
        pytest.param("example.com/team=a,app=llm", True, id="prefixed-keys-and-conjunction"),
        pytest.param("app=llm,tier in (cpu,arm)", False, id="every-requirement-must-hold"),
    ],
)
def test_a_selector_matches_labels_as_the_api_server_does(text: str, matches: bool) -> None:
    assert parse_selector(text).matches(LABELS) is matches


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("app=llm,", id="trailing-comma"),
        pytest.param("tier in (gpu", id="unclosed-set"),
        pytest.param("app=l m", id="space-in-a-value"),
        pytest.param("app>3", id="unsupported-operator"),
        pytest.param("-app=llm", id="key-starting-with-a-dash"),
    ],
)
def test_an_unreadable_selector_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"."):
        parse_selector(text)


def test_equal_selectors_written_differently_compare_and_print_equal() -> None:
    one = parse_selector("tier in (cpu,gpu), app=llm")
    other = parse_selector("app==llm,tier in (gpu,cpu)")
    assert one == other
    assert str(one) == str(other)
