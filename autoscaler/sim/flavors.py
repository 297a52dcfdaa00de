"""ResourceFlavor taints against a pod set's tolerations, as Kueue's flavor assigner checks them
before any quota (kueue pkg/scheduler/flavorassigner/flavorassigner.go, checkFlavorForPodSets):
a NoSchedule or NoExecute taint of the flavor (`spec.nodeTaints`) that neither the pod set's
tolerations nor the flavor's own `spec.tolerations` tolerate rules the flavor out for the
workload, whatever its free quota (k8s.io/component-helpers scheduling/corev1/helpers.go,
FindMatchingUntoleratedTaint; k8s.io/api core/v1 toleration.go, ToleratesTaint, called by
Kueue with the comparison operators on).

The emulation keeps one ResourceFlavor per ClusterQueue: a flavor ruled out leaves the
workload pending, with Kueue's message for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")  # a PreferNoSchedule taint never rules out
_DECIMAL = re.compile(r"0|[1-9][0-9]*")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def __str__(self) -> str:
        """Go's %s of a corev1.Taint, as Kueue's message prints it: its fields in braces, the
        unset TimeAdded as <nil>."""
        return f"{{{self.key} {self.value} {self.effect} <nil>}}"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # "" reads as Equal
    value: str = ""
    effect: str = ""  # "": every effect

    def tolerates(self, taint: Taint) -> bool:
        """k8s.io/api core/v1 toleration.go, ToleratesTaint: the effect and key must match
        where set; Exists matches any value, Equal the same value, Gt and Lt compare the
        values as decimal integers (the taint's above, or below, the toleration's)."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Gt", "Lt"):
            if not (_DECIMAL.fullmatch(self.value) and _DECIMAL.fullmatch(taint.value)):
                return False
            taint_value, bound = int(taint.value), int(self.value)
            return taint_value > bound if self.operator == "Gt" else taint_value < bound
        return self.operator in ("", "Equal") and self.value == taint.value


def untolerated_taint(taints: Iterable[Taint], tolerations: Iterable[Toleration]) -> Taint | None:
    """The first blocking taint no toleration tolerates (FindMatchingUntoleratedTaint)."""
    kept = tuple(tolerations)
    for taint in taints:
        if taint.effect in BLOCKING_EFFECTS and not any(t.tolerates(taint) for t in kept):
            return taint
    return None


def untolerated_message(taint: Taint, flavor: str) -> str:
    """flavorassigner.go's status for a flavor ruled out by a taint."""
    return f"untolerated taint {taint} in flavor {flavor}"
