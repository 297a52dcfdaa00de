"""The chart's copy of the owner kinds table (`files/owner-kinds.yaml`), generated from the
service's one table (`autoscaler/domain/policy/owners.py`, `OWNER_KINDS`).

The chart reads it for its RBAC (reads on every kind, `patch` on the enabled ones) and for
the kinds the rendered settings name when `config.cluster.ownerKinds` leaves one out, so a
new owner kind needs no chart edit. `test_chart_owner_kinds.py` fails when the committed file
differs from what this writes. Regenerate after changing the table (`--check` only checks):
    .venv/bin/python -m tests.deploy.owner_kinds_file [--check]
"""

from __future__ import annotations

import sys

import yaml

from autoscaler.domain.policy.owners import INTERMEDIATES, OWNER_KINDS
from tests.deploy.tooling import CHART
from tests.support.generated_text import GeneratedText

OWNER_KINDS_FILE = CHART / "files" / "owner-kinds.yaml"
GENERATED = GeneratedText(OWNER_KINDS_FILE, module="tests.deploy.owner_kinds_file")
HEADER = (
    "# Generated from autoscaler/domain/policy/owners.py (OWNER_KINDS) by\n"
    "# `python -m tests.deploy.owner_kinds_file`: do not edit. The chart's RBAC and the\n"
    "# kinds config.cluster.ownerKinds leaves out come from here.\n"
)


def owner_kinds_text() -> str:
    rows = [
        {
            "kind": row.kind,
            "group": row.group,
            "plural": row.plural,
            "enabled": row.enabled,
            "annotated": row.annotated,
            **({"podSelector": row.pod_selector} if row.pod_selector else {}),
        }
        for row in OWNER_KINDS
    ]
    between = [
        {"kind": row.kind, "group": row.group, "plural": row.plural}
        for row in INTERMEDIATES.values()
    ]
    body = {"ownerKinds": rows, "intermediates": between}
    return HEADER + yaml.safe_dump(body, sort_keys=False)


if __name__ == "__main__":
    sys.exit(GENERATED.main(sys.argv[1:], owner_kinds_text))
