"""Whether a pod set may use a ResourceFlavor: its taints against the pod set's tolerations,
its node labels against the pod set's node selector and required node affinity, as Kueue's
flavor assigner checks them before any quota (kubernetes-sigs/kueue
pkg/scheduler/flavorassigner/flavorassigner.go, `checkFlavorForPodSets` and `flavorSelector`).

    flavor_mismatch(nodes, placement) -> str | None   # why the flavor is skipped; None: usable

- Taints: a NoSchedule or NoExecute taint of the flavor that no toleration of the pod set nor
  of the flavor (spec.tolerations) tolerates skips the flavor (PreferNoSchedule is ignored);
  a Gt or Lt toleration compares integer values, as Kueue enables those operators.
- Labels: only the node selector keys and affinity expressions whose key is one of the
  flavor's own node labels count; an affinity term left without expressions matches any
  flavor, the terms are ORed, and `matchFields` is not consulted. The flavor's labels stand
  for the node (In, NotIn, Exists, DoesNotExist, Gt, Lt as the kube-scheduler reads them).
A Gt/Lt value that is not an integer is an error in Kueue (the waiter is not assigned):
`PlacementError`, which the fit reports as unknown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # or "Exists"
    value: str = ""
    effect: str = ""  # empty: every effect


@dataclass(frozen=True)
class NodeRequirement:
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class Placement:
    """Where a pod set's pods may run: the pod template's nodeSelector, its required node
    affinity's terms (matchExpressions only; None: no required affinity) and tolerations."""

    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity_terms: tuple[tuple[NodeRequirement, ...], ...] | None = None
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True)
class FlavorNodes:
    """A ResourceFlavor's spec.nodeLabels, spec.nodeTaints and spec.tolerations; `missing`:
    the ClusterQueue names a flavor that does not exist (Kueue skips it)."""

    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    missing: bool = False


ANY_NODE = FlavorNodes()
ANYWHERE = Placement()


class PlacementError(ValueError):
    """Kueue cannot evaluate the pod set's affinity against this flavor (a malformed Gt/Lt)."""


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """k8s.io/api core/v1 Toleration.ToleratesTaint, with the comparison operators on, as
    Kueue's flavor assigner calls it (FindMatchingUntoleratedTaint(..., true)): Gt and Lt
    compare the taint's value with the toleration's as canonical decimal integers."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    if toleration.operator in ("Gt", "Lt"):
        if not (_canonical_int(toleration.value) and _canonical_int(taint.value)):
            return False
        have, bound = int(taint.value), int(toleration.value)
        return have > bound if toleration.operator == "Gt" else have < bound
    return toleration.operator in ("", "Equal") and toleration.value == taint.value


def flavor_mismatch(flavor: str, nodes: FlavorNodes, placement: Placement) -> str | None:
    """Why Kueue skips `flavor` for this pod set; None when the pod set may use it."""
    if nodes.missing:
        return f"flavor {flavor} not found"
    tolerations = (*placement.tolerations, *nodes.tolerations)
    for taint in nodes.taints:
        if taint.effect in BLOCKING_EFFECTS and not any(tolerates(t, taint) for t in tolerations):
            return f"untolerated taint {taint.key}={taint.value}:{taint.effect} in flavor {flavor}"
    if not _matches(nodes.labels, placement):
        return f"flavor {flavor} doesn't match node affinity"
    return None


def _matches(labels: Mapping[str, str], placement: Placement) -> bool:
    selector = {k: v for k, v in placement.node_selector.items() if k in labels}
    if any(labels[key] != value for key, value in selector.items()):
        return False
    if placement.affinity_terms is None:
        return True
    terms = [tuple(r for r in term if r.key in labels) for term in placement.affinity_terms]
    if not terms or any(not term for term in terms):  # an emptied term matches every flavor
        return True
    return any(all(_holds(r, labels) for r in term) for term in terms)


def _holds(requirement: NodeRequirement, labels: Mapping[str, str]) -> bool:
    """k8s.io/apimachinery labels.Requirement.Matches (every key here is among the labels)."""
    value, operator = labels.get(requirement.key), requirement.operator
    if operator == "In":
        return value in requirement.values
    if operator == "NotIn":
        return value not in requirement.values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        if len(requirement.values) != 1 or not _integer(requirement.values[0]):
            raise PlacementError(f"{operator} needs one integer value for {requirement.key}")
        if value is None or not _integer(value):
            return False  # the flavor's label is not an integer: no match
        have, bound = int(value), int(requirement.values[0])
        return have > bound if operator == "Gt" else have < bound
    raise PlacementError(f"unknown node selector operator {operator}")


def _integer(text: str) -> bool:
    return text.lstrip("-").isdigit()


_CANONICAL_INT = re.compile(r"0|-?[1-9][0-9]*")
INT64 = 1 << 63


def _canonical_int(text: str) -> bool:
    """k8s.io/apimachinery content.IsDecimalInteger, then strconv.ParseInt's int64 range."""
    return _CANONICAL_INT.fullmatch(text) is not None and -INT64 <= int(text) < INT64
