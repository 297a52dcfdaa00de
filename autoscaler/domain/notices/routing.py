"""Which named notification targets hear about a workload (ISSUE 15).

Names only, never addresses: the settings name each target (`notifications.targets`), and a
namespace, a rule or the defaults pick among them. So whoever can annotate a namespace can
choose who is told, but never make the service post to an address of their choosing. A name
the settings do not know is counted and logged by the dispatcher, not dropped here, so the
mistake stays visible.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from autoscaler.domain.annotations import NOTIFY
from autoscaler.domain.models import WorkloadInfo
from autoscaler.domain.policy.rules import Rule

EVENTS_ONLY = "none"  # the namespace wants no target: the Kubernetes Event alone


def targets_for(workload: WorkloadInfo, *, rule: Rule, defaults: Sequence[str]) -> tuple[str, ...]:
    """The namespace's annotation (a comma list), else its label of the same key (a label
    value holds no comma: one name), else the rule's `notify`, else the defaults."""
    for written in (_annotation(workload), _label(workload)):
        if written is not None:
            return () if any(name.lower() == EVENTS_ONLY for name in written) else written
    return _names(rule.notice.notify or defaults) or ()


def _annotation(workload: WorkloadInfo) -> tuple[str, ...] | None:
    value = (workload.namespace_annotations or {}).get(NOTIFY)
    return None if value is None else _names(value.split(","))


def _label(workload: WorkloadInfo) -> tuple[str, ...] | None:
    value = (workload.namespace_labels or {}).get(NOTIFY)
    return None if value is None else _names([value])


def _names(written: Iterable[str]) -> tuple[str, ...] | None:
    """Trimmed, empty ones left out, each once, in the order written; None if none is left,
    so an empty annotation (`notify: ""`) falls through instead of silencing the namespace."""
    names = tuple(dict.fromkeys(name.strip() for name in written if name.strip()))
    return names or None
