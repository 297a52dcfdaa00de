"""docs/WORKLOADS.md's table of the owner kinds, generated from their rows (`OWNER_KINDS`,
`autoscaler/domain/policy/owners.py`). `tests/domain/test_owner_kinds_doc.py` fails when the
committed table differs; rewrite it, or only check it, with

    python -m tests.support.workload_docs [--check]
"""

from __future__ import annotations

import sys

from autoscaler.domain.policy.owners import OWNER_KINDS, POD_GROUP_KEY, OwnerKind, PodsFound
from tests.support.generated_text import GeneratedText

GENERATED = GeneratedText.table_in(
    "WORKLOADS.md", what="owner kinds", module="tests.support.workload_docs"
)
HEADER = (
    "| Kind | API group/version | Its pods, found by | On by default | What a stop means "
    "| How it comes back | The stop | Our annotations | Upstream source |",
    "|---|---|---|---|---|---|---|---|---|",
)


def table() -> str:
    """The block between the markers, both included."""
    return GENERATED.block((*HEADER, *(_row(row) for row in OWNER_KINDS)))


def _row(row: OwnerKind) -> str:
    cells = (
        f"`{row.kind}`",
        f"`{row.api_version}`",
        _pods_found(row),
        "yes" if row.enabled else "no (opt-in)",
        row.stop_means,
        row.bring_back,
        "lasts" if row.stop_lasts else "a requeue",
        "on it too" if row.annotated else "on the Workload only: never written",
        _source(row.source),
    )
    return f"| {' | '.join(cells)} |"


def _pods_found(row: OwnerKind) -> str:
    through = " → ".join((row.kind, *row.through, "Pod"))
    if row.pods_found is PodsFound.SELECTOR:
        return f"label selector `{row.pod_selector}`"
    if row.pods_found is PodsFound.OWNERSHIP:
        return f"ownerReferences: {through}"
    if row.pods_found is PodsFound.POD_GROUP:
        return f"Kueue's pod group (`{POD_GROUP_KEY}`)"
    # QUEUED_PODS: each pod its own Workload, the kind found above it
    return f"Kueue's pod integration, one Workload a pod; the owner above it: {through}"


def _source(source: str) -> str:
    """ "kubernetes-sigs/kueue pkg/x/y.go" as a link to the file (a folder: to the folder)."""
    repository, _, path = source.partition(" ")
    where = "tree" if path.endswith("/") else "blob"
    return f"[{repository} `{path}`](https://github.com/{repository}/{where}/main/{path})"


def committed() -> str:
    return GENERATED.committed()


def main(args: list[str]) -> int:
    return GENERATED.main(args, table)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
