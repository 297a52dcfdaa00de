"""docs/WORKLOADS.md's table of the owner kinds is the table in `OWNER_KINDS`: a row changed
without regenerating the page fails here."""

from __future__ import annotations

import pytest

from autoscaler.domain.policy.owners import OWNER_KINDS
from tests.support import workload_docs


def test_the_committed_kinds_table_is_generated_from_the_owner_kinds() -> None:
    assert workload_docs.committed() == workload_docs.table(), (
        "docs/WORKLOADS.md's table is stale: run `python -m tests.support.workload_docs`"
    )


def test_each_kind_has_one_row_naming_its_stop_and_its_upstream_source() -> None:
    rows = workload_docs.table().splitlines()[3:-1]

    assert len(rows) == len(OWNER_KINDS)
    for line, kind in zip(rows, OWNER_KINDS, strict=True):
        assert line.startswith(f"| `{kind.kind}` | `{kind.api_version}` |")
        assert ("| a requeue |" in line) is not kind.stop_lasts
        assert f"/{kind.source.partition(' ')[2]})" in line


def test_the_check_fails_on_a_stale_page_and_passes_on_the_committed_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert workload_docs.main(["--check"]) == 0
    stale = workload_docs.table().replace("| lasts |", "| for ever |", 1)
    monkeypatch.setattr(workload_docs, "table", lambda: stale)

    assert workload_docs.main(["--check"]) == 1
