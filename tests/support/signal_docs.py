"""docs/SIGNALS.md's table of the evidence signals, generated from their rows (`SIGNALS`), the
settings' defaults and the adapter's PromQL. `tests/domain/test_evidence_signals.py` fails when
the committed table differs; rewrite it, or only check it, with

    python -m tests.support.signal_docs [--check]
"""

from __future__ import annotations

import sys

from autoscaler.adapters.prometheus.evidence_base import slot_promql
from autoscaler.domain.usage.evidence import SIGNALS, EvidenceSignal, Signal
from autoscaler.settings.evidence import EvidenceSettings
from autoscaler.settings.tree import PolicySettings
from tests.support.generated_text import GeneratedText

GENERATED = GeneratedText.table_in(
    "SIGNALS.md", what="evidence signals", module="tests.support.signal_docs"
)
HEADER = (
    "| Signal (`prometheus.evidence.`) | Tells | Per slot, at the default slot | Counts when "
    "| Device-level | Weighed as | Its failure makes unknown |",
    "|---|---|---|---|---|---|---|",
)


def table() -> str:
    """The block between the markers, both included."""
    defaults = EvidenceSettings()
    return GENERATED.block((*HEADER, *(_row(s, row, defaults) for s, row in SIGNALS.items())))


def _row(signal: Signal, row: EvidenceSignal, defaults: EvidenceSettings) -> str:
    cells = (
        f"`{signal}`",
        row.tells,
        _per_slot(signal, row, defaults),
        _counts_when(signal, row, defaults),
        "yes" if row.device_level else "no",
        "use (busy)" if row.means_use else "loading",
        "every workload" if row.covers is None else ", ".join(sorted(row.covers)),
    )
    return f"| {' | '.join(cells)} |"


def _per_slot(signal: Signal, row: EvidenceSignal, defaults: EvidenceSettings) -> str:
    if row.form is None:
        return "per pod: [RAY-SIGNALS.md](RAY-SIGNALS.md)"
    promql = slot_promql(signal, defaults.device(signal).metric, slot=PolicySettings().slot)
    return f"{row.form}: `{promql}`"


def _counts_when(signal: Signal, row: EvidenceSignal, defaults: EvidenceSettings) -> str:
    if row.form is None:
        return "tasks run or finish in a slot"
    section = getattr(defaults, signal.value)
    key = type(section).model_fields[row.bar].alias or row.bar
    bar = f"`{key}` (default {_number(defaults.bar(signal))})"
    return (
        f"it reaches the GPU model's idle draw + {bar}"
        if row.over_baseline
        else f"it reaches {bar}"
    )


def _number(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:g}"


def committed() -> str:
    return GENERATED.committed()


if __name__ == "__main__":
    sys.exit(GENERATED.main(sys.argv[1:], table))
