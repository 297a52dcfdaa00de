"""What the suspend-was annotation says (ISSUE 17): only what spec.suspend was before this
service suspended the RayCluster ("absent" or "false"); anything else, a hand-written "true"
included, means it was not ours to undo."""

from __future__ import annotations

import pytest

from autoscaler.domain.annotations import NotOurs, restored_suspend, suspend_was_text


@pytest.mark.parametrize(
    ("suspend", "text"),
    [
        pytest.param(None, "absent", id="absent-is-recorded-absent"),
        pytest.param(False, "false", id="false-is-recorded-false"),
    ],
)
def test_what_spec_suspend_was_reads_back_as_it_was(suspend: bool | None, text: str) -> None:
    assert suspend_was_text(suspend) == text
    assert restored_suspend(text) is suspend


def test_a_raycluster_suspended_already_has_nothing_of_ours_to_record() -> None:
    with pytest.raises(ValueError, match="not ours to suspend"):
        suspend_was_text(True)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        pytest.param(None, "not suspended by this service", id="no-annotation"),
        pytest.param("true", "never written by this service", id="hand-written-true"),
        pytest.param("False", "never written by this service", id="other-spelling"),
    ],
)
def test_anything_this_service_never_writes_is_not_ours_to_undo(text: str | None, why: str) -> None:
    refused = restored_suspend(text)
    assert isinstance(refused, NotOurs)
    assert why in refused.reason
